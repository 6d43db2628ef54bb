/**
 * Steps of the owner's account tests over HTTP: what a wallet does with an account build,
 * signed by the EOA owner key (`eth_signTypedData_v4` of its typed data) or by a passkey (a
 * WebAuthn assertion over its `signingDigest`, relayed with `webauthn`), then relayed through
 * POST /userops and polled to the end.
 */
import { Duration, Effect } from "effect"
import { createWalletClient, type Hash, type Hex, http, parseEther } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import type { Call } from "../../src/chain/Accounts4337.ts"
import { Chain, viemChainOf } from "../../src/chain/Chain.ts"
import { LocalNetworks } from "../../src/chain/LocalNetwork.ts"
import type { UserOperation } from "../../src/domain/Operations.ts"
import type { OwnerBuild } from "../../src/owner/Wire.ts"
import type { Api } from "../delegations/helpers.ts"
import { signOp } from "../delegations/helpers.ts"
import type { SoftwareAuthenticator } from "../support/SoftwareAuthenticator.ts"

export type Signer = { readonly kind: "eoa"; readonly key: `0x${string}` } | { readonly kind: "passkey"; readonly authenticator: SoftwareAuthenticator }

/** The signed submission of a build: `signature` (EOA) or `signature: "0x"` + `webauthn` (passkey). */
export const signed = (build: OwnerBuild, signer: Signer) =>
  Effect.gen(function*() {
    if (signer.kind === "eoa") return (yield* signOp(signer.key, build.userOp)) as UserOperation
    const a = signer.authenticator.assert(build.signingDigest as Hash)
    return {
      ...build.userOp,
      signature: "0x",
      webauthn: { keyId: signer.authenticator.keyId, authenticatorData: a.authenticatorData, clientDataJSON: a.clientDataJSON, signature: a.signature }
    } as UserOperation
  })

/** Relays through POST /userops and polls until terminal. */
export const relayOp = (api: Api, op: UserOperation) =>
  Effect.gen(function*() {
    let receipt = yield* api.userops.submit({ payload: op })
    for (let i = 0; i < 150 && receipt.status === "submitted"; i++) {
      yield* Effect.sleep(Duration.millis(200))
      receipt = yield* api.userops.get({ params: { userOpId: receipt.userOpId }, query: {} })
    }
    return receipt
  })

/** Build → sign → relay; the receipt. */
export const run = (api: Api, build: OwnerBuild, signer: Signer) =>
  Effect.flatMap(signed(build, signer), (op) => relayOp(api, op))

/**
 * A transaction an EOA sends itself, around the service (funded first; fixed gas: sent even
 * when it will revert); its receipt status.
 */
export const sendTx = (key: Hex, call: Call) =>
  Effect.gen(function*() {
    const [net] = yield* LocalNetworks
    const chain = yield* Chain
    const from = privateKeyToAccount(key)
    yield* Effect.promise(() =>
      chain.client.request({ method: "anvil_setBalance" as never, params: [from.address, `0x${parseEther("1").toString(16)}`] as never })
    )
    const wallet = createWalletClient({ chain: viemChainOf(net!), transport: http(net!.rpcUrl), account: from })
    const hash = yield* Effect.promise(() => wallet.sendTransaction({ to: call.to, data: call.data ?? "0x", value: 0n, gas: 1_500_000n }))
    return (yield* Effect.promise(() => chain.client.waitForTransactionReceipt({ hash, pollingInterval: 50 }))).status
  })

/** Moves the local chain's clock `seconds` ahead and mines a block. */
export const increaseTime = (seconds: number) =>
  Effect.gen(function*() {
    const chain = yield* Chain
    yield* Effect.promise(async () => {
      await chain.client.request({ method: "evm_increaseTime" as never, params: [seconds] as never })
      await chain.client.request({ method: "evm_mine" as never, params: [] as never })
    })
  })
