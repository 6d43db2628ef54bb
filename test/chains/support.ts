/** What the chains tests share: a signer's account on a chain, a balance read there, a grant made there. */
import { assert } from "@effect/vitest"
import type { Delegation } from "@metamask/smart-accounts-kit"
import { Effect } from "effect"
import { type Address, createPublicClient, erc20Abi, http } from "viem"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { type Session, signLeg, signOp } from "../delegations/helpers.ts"
import type { testNetwork } from "../support/TestChain.ts"

export const accountOn = (s: Session, chainId: number) =>
  Effect.map(s.api.accounts.listAccounts(), (accounts) => accounts.find((a) => a.index === 0 && a.chainId === chainId)!)

export const balanceOn = (network: ReturnType<typeof testNetwork>, token: Address, holder: string) =>
  Effect.promise(() =>
    createPublicClient({ chain: viemChainOf(network), transport: http(network.rpcUrl) }).readContract({
      address: token,
      abi: erc20Abi,
      functionName: "balanceOf",
      args: [holder as Address]
    })
  )

/** A USDC grant of `owner`'s account on `chainId` to `delegate`'s account there, built, signed and enabled. */
export const grantOn = (owner: Session, delegate: Session, chainId: number, recipient: string) =>
  Effect.gen(function*() {
    const delegateAccount = yield* accountOn(delegate, chainId)
    const build = yield* owner.api.delegations.build({
      payload: {
        name: `on ${chainId}`,
        kind: "agent",
        delegateeAddress: delegateAccount.address,
        chainId,
        budgets: [{ token: { symbol: "USDC" }, amount: 10 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 5 },
        maxActions: 3,
        recipientAllowlist: [{ name: "shop", address: recipient, chainId }]
      }
    })
    assert.strictEqual(build.enableUserOp.chainId, chainId)
    const leg = build.delegations[0]!
    assert.strictEqual(leg.typedData.domain.chainId, chainId, "the owner signs the grant for this chain")
    const signature = yield* signLeg(owner.key, leg.typedData)
    const created = yield* owner.api.delegations.create({
      payload: {
        userOp: yield* signOp(owner.key, build.enableUserOp),
        userOpHash: build.userOpHash,
        intentType: "delegation_enable",
        delegationSignatures: [{ permissionId: leg.permissionId, signature }]
      }
    })
    assert.strictEqual(created.status, "active")
    return { created, signed: { ...leg.delegation, signature } as unknown as Delegation }
  })
