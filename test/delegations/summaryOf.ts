/**
 * The summary of a PolicySet as the service writes it: the grant built (Grant.ts) on a made-up
 * deployment, its caveats read back (SignedTerms.ts), the words written from them (Summary.ts).
 * For the pure tests; the end-to-end checks against the enforcers' own decoders are in
 * test/delegations/summaryTerms.test.ts.
 */
import type { Address, Hex } from "viem"
import type { DelegationEnvironment } from "../../src/chain/Network.ts"
import type { PolicySet } from "../../src/delegations/Domain.ts"
import { grantTermsOf, makeGrant, makeRevocationGrant, revocationTermsOf } from "../../src/delegations/Grant.ts"
import { decodeSignedTerms } from "../../src/delegations/SignedTerms.ts"
import { humanSummary } from "../../src/delegations/Summary.ts"
import { NATIVE_ADDRESS, nativeToken } from "../../src/tokens/Native.ts"
import type { Token } from "../../src/tokens/TokenRegistry.ts"

const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as Address
const names = ["TimestampEnforcer", "RedeemerEnforcer", "ValueLteEnforcer", "AllowedTargetsEnforcer", "AllowedMethodsEnforcer",
  "AllowedCalldataEnforcer", "LogicalOrWrapperEnforcer", "TransferCapEnforcer", "LimitedCallsEnforcer", "MultiTokenPeriodEnforcer",
  "ERC20StreamingEnforcer", "ExactCalldataEnforcer", "NativeTokenPeriodTransferEnforcer", "NativeTokenStreamingEnforcer",
  "ApprovalEnforcer", "ApprovalRevocationEnforcer"]
export const summaryEnvironment: DelegationEnvironment = {
  DelegationManager: addr(1),
  EntryPoint: addr(2),
  SimpleFactory: addr(3),
  implementations: {},
  caveatEnforcers: Object.fromEntries(names.map((n, i) => [n, addr(0x900 + i)]))
}

/** The summary of `policy` granted to `delegate` at `now`, as the build writes it. */
export const summaryOf = (
  policy: PolicySet,
  delegate: string,
  tokens: ReadonlyArray<Token>,
  options: { readonly name?: string; readonly now?: Date } = {}
): string => {
  const now = options.now ?? new Date("2026-01-01T00:00:00.000Z")
  const known = [...tokens, nativeToken(31337)]
  const decimalsOf = (a: string) => a.toLowerCase() === NATIVE_ADDRESS ? 18 : known.find((t) => t.address.toLowerCase() === a.toLowerCase())?.decimals ?? 18
  const parties = { delegator: addr(0xde1e), delegate: delegate.toLowerCase() as Address, salt: "0x01" as Hex }
  const grant = policy.revocation !== undefined
    ? makeRevocationGrant(summaryEnvironment, revocationTermsOf(policy, policy.revocation, parties))
    : makeGrant(summaryEnvironment, grantTermsOf(policy, decimalsOf, parties, now)!)
  if (grant._tag === "Invalid") throw new Error(grant.message)
  const signed = decodeSignedTerms(grant.delegation, summaryEnvironment)
  if ("problem" in signed) throw new Error(signed.problem)
  return humanSummary(
    signed,
    (a) => known.find((t) => t.address.toLowerCase() === a.toLowerCase()),
    { ...(options.name === undefined ? {} : { name: options.name }), recipientNames: policy.recipientAllowlist },
    Math.floor(now.getTime() / 1000)
  )
}
