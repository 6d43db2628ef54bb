/**
 * A mandate's standing on chain, checked before anything is built under it: revoked, or its
 * job count or funded total used up by the agent's own redemptions (the enforcers' counters,
 * keyed by the wrapper enforcer and the mandate). The chain's counters are the truth; the
 * service only declines early what the chain would refuse.
 */
import { LimitedCallsEnforcer } from "@metamask/delegation-abis"
import { Effect } from "effect"
import { encodeFunctionData, type Hex, hexToBigInt } from "viem"
import { OutOfScope } from "../api/Errors.ts"
import { mapUpstream } from "../builds/Wire.ts"
import type { Chains } from "../chain/Chains.ts"
import { argumentCapEnforcerAbi } from "../chain/contracts/Enforcers.ts"
import { type MandateRecord, selectors } from "./Mandate.ts"
import { mandateLimits } from "./MandateDelegation.ts"

export const makeStanding = (chains: Chains["Service"]) => {
  /** Reads one uint256 of an enforcer's state (`eth_call`) on the mandate's chain; the chain's count is the truth. */
  const readCount = (chain: { readonly call: Chains["Service"]["primary"]["chain"]["call"] }, to: string, data: Hex) =>
    mapUpstream(chain.call({ to: to as Hex, data }).pipe(
      Effect.catchTag("CallReverted", (e) => Effect.die(new Error(`enforcer state read reverted: ${e.message}`)))
    )).pipe(Effect.map((out) => hexToBigInt(out)))

  /**
   * Declined before anything is signed: a revoked mandate, and one whose job count or total the
   * agent's own redemptions have used up on chain (the enforcers' counters, keyed by the wrapper).
   */
  const standing = Effect.fn("Hiring.standing")(function*(m: MandateRecord, next: { readonly fundUnits?: bigint }) {
    if (m.revokedAt !== undefined) {
      return yield* new OutOfScope({ message: `This mandate was revoked at ${m.revokedAt}; hire again.`, declineReason: "mandate_revoked" })
    }
    const { chain, network } = yield* chains.serving(m.chainId)
    const limits = mandateLimits(network.delegation, m.delegation)
    const env = network.delegation.caveatEnforcers
    const wrapper = env["LogicalOrWrapperEnforcer"]
    if (limits === undefined || wrapper === undefined) return
    if (next.fundUnits === undefined) {
      const used = yield* readCount(chain, env["LimitedCallsEnforcer"]!, encodeFunctionData({
        abi: LimitedCallsEnforcer,
        functionName: "callCounts",
        args: [wrapper as Hex, m.mandateId as Hex]
      }))
      if (used >= limits.maxJobs) {
        return yield* new OutOfScope({
          message: `This mandate's ${limits.maxJobs} jobs are used up on chain; hire again.`,
          declineReason: "mandate_exhausted",
          details: { maxJobs: Number(limits.maxJobs), used: Number(used) }
        })
      }
      return
    }
    const spent = yield* readCount(chain, env["ArgumentCapEnforcer"]!, encodeFunctionData({
      abi: argumentCapEnforcerAbi,
      functionName: "totals",
      args: [wrapper as Hex, m.mandateId as Hex, selectors.setBudgetWithPaymentToken]
    }))
    if (spent + next.fundUnits > limits.total) {
      return yield* new OutOfScope({
        message: `This mandate's total is spent (${spent} of ${limits.total} base units funded on chain).`,
        declineReason: "cap_exceeded",
        details: { total: limits.total.toString(), funded: spent.toString() }
      })
    }
  })

  return standing
}
