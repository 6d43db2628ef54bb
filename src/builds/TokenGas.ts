/**
 * Gas paid in a stablecoin through the token paymaster (a build's `gasToken`): which token
 * and how (`USDC` by EIP-2612 permit, `USDT` by allowance), and the paymaster's fields once
 * gas is estimated (`payInToken`). `OperationBuilder.ts` decides when (docs/onchain.md, the token paymaster).
 */
import { Effect } from "effect"
import { type Address, formatUnits } from "viem"
import { ServiceUnavailable } from "../api/Errors.ts"
import type { AccountStack, Call } from "../chain/Accounts4337.ts"
import type { GasEstimate } from "../chain/Bundler.ts"
import type { Chain } from "../chain/Chain.ts"
import type { Network, TokenInfo } from "../chain/Network.ts"
import {
  allowancePaymasterData,
  approvalCalls,
  permitDigest,
  permitSignaturePrefix,
  TOKEN_PAYMASTER_GAS,
  tokenCost
} from "../chain/TokenPaymaster.ts"
import type { GasPermit, UsdtApproval } from "../domain/Operations.ts"
import { mapUpstream } from "./Wire.ts"

/**
 * How the operation's gas is paid when the caller chooses: `USDC` = the USD stablecoin by
 * EIP-2612 permit (two signatures), `USDT` = the second stablecoin by allowance (an unlimited
 * approve batched into a sponsored operation when needed; one signature). Absent: sponsored or native.
 */
export type GasToken = "USDC" | "USDT"

/**
 * `GasPermit.kernelVersion`: the account implementation whose ERC-1271 `isValidSignature`
 * the token's permit consults (the spec's name comes from Kernel accounts, which wrap the
 * digest in their own EIP-712 domain). HybridDeleGator checks the owner's ECDSA signature
 * of the permit digest itself: nothing to wrap.
 */
export const ACCOUNT_IMPLEMENTATION_VERSION = "HybridDeleGator 1.3.0"

/** Which stablecoin pays and how: by permit (USDC) or by allowance (USDT). */
export interface TokenGasChoice {
  readonly mode: "permit" | "allowance"
  readonly token: TokenInfo
  readonly paymaster: Address
}

const maxOf = (a: bigint, b: bigint) => (a > b ? a : b)
const lower = <S extends string>(s: S): S => s.toLowerCase() as S

export const makeTokenGas = (deps: {
  readonly chain: Chain["Service"]
  readonly stack: AccountStack["Service"]
  readonly network: Network["Service"]
}) => {
  const { chain, network, stack } = deps
  const tokenPaymasterAddress = network.tokenPaymaster?.address

    const tokenGasChoice = (gasToken: GasToken): Effect.Effect<TokenGasChoice, ServiceUnavailable> => {
      if (tokenPaymasterAddress === undefined) {
        return Effect.fail(new ServiceUnavailable({ message: "Gas in stablecoins needs a token paymaster, and none is configured" }))
      }
      if (gasToken === "USDT") {
        return Effect.succeed({ mode: "allowance", token: network.tokens.usdt, paymaster: tokenPaymasterAddress })
      }
      const usd = network.tokens.usd
      return usd.permitVersion === undefined
        ? Effect.fail(new ServiceUnavailable({ message: `${usd.symbol} has no EIP-2612 permit configured` }))
        : Effect.succeed({ mode: "permit", token: usd, paymaster: tokenPaymasterAddress })
    }

    /**
     * The token paymaster's fields once gas is estimated: its gas limits, the most it will
     * charge (its own `tokenCost` of the operation's maximum cost), and either the permit
     * prefix and digest (USDC) or the allowance, with an approve batched when short (USDT).
     */
    const payInToken = Effect.fn("OperationBuilder.payInToken")(function*(a: {
      readonly tokenGas: TokenGasChoice
      readonly sender: Address
      readonly calls: ReadonlyArray<Call>
      readonly allowance: bigint
      readonly estimated: GasEstimate
      readonly totalGasBeforePaymaster: bigint
      readonly maxFeePerGas: bigint
      readonly deadline: bigint
    }) {
      const { token: info, paymaster: pm } = a.tokenGas
      const permit = a.tokenGas.mode === "permit"
      const paymasterVerificationGasLimit = maxOf(a.estimated.paymasterVerificationGasLimit ?? 0n, TOKEN_PAYMASTER_GAS.verificationFloor) +
        (permit ? TOKEN_PAYMASTER_GAS.permitExtra : 0n)
      const paymasterPostOpGasLimit = maxOf(a.estimated.paymasterPostOpGasLimit ?? 0n, TOKEN_PAYMASTER_GAS.postOp)
      const maxCost = (a.totalGasBeforePaymaster + paymasterVerificationGasLimit + paymasterPostOpGasLimit) * a.maxFeePerGas
      const [maxTokenCost, balance, permitNonce] = yield* mapUpstream(Effect.all([
        tokenCost(chain, pm, info.address, maxCost),
        chain.erc20Balance(info.address, a.sender),
        permit ? chain.permitNonce(info.address, a.sender) : Effect.succeed(0n)
      ], { concurrency: "unbounded" }))
      const fields = { paymaster: pm, paymasterVerificationGasLimit, paymasterPostOpGasLimit }
      const common = { info, maxTokenCost, balance }
      if (permit) {
        const signaturePrefix = permitSignaturePrefix(info.address, maxTokenCost, a.deadline)
        const gasPermit: typeof GasPermit.Type = {
          paymaster: lower(pm),
          token: lower(info.address),
          tokenName: info.name,
          tokenVersion: info.permitVersion ?? "1",
          kernelVersion: ACCOUNT_IMPLEMENTATION_VERSION,
          permitAmount: maxTokenCost.toString(),
          permitNonce: permitNonce.toString(),
          permitDeadline: a.deadline.toString(),
          permitDigest: permitDigest({
            chainId: network.chainId,
            token: info,
            owner: a.sender,
            spender: pm,
            value: maxTokenCost,
            nonce: permitNonce,
            deadline: a.deadline
          }),
          signaturePrefix: lower(signaturePrefix),
          estimatedFee: Number(formatUnits(maxTokenCost, info.decimals))
        }
        return {
          ...common,
          method: "token_permit",
          callData: undefined,
          paymasterFields: { ...fields, paymasterData: signaturePrefix },
          gasPermit,
          usdtApproval: null
        }
      }
      const short = a.allowance < maxTokenCost
      const approvals = short ? approvalCalls(info.address, pm, maxTokenCost, a.allowance) : []
      const usdtApproval: typeof UsdtApproval.Type | null = short
        ? {
          token: lower(info.address),
          paymaster: lower(pm),
          amount: maxTokenCost.toString(),
          calls: approvals.map((c) => ({ to: lower(c.to), data: lower(c.data), value: c.value.toString() }))
        }
        : null
      return {
        ...common,
        method: short ? "token_approval" : "token_allowance",
        callData: short ? stack.encodeExecute([...approvals, ...a.calls]) : undefined,
        paymasterFields: { ...fields, paymasterData: allowancePaymasterData(info.address) },
        gasPermit: null,
        usdtApproval
      }
    })

  return { tokenGasChoice, payInToken }
}
