/**
 * AP2 open Payment Mandates in (issue 44 item 3): the posted mandate is checked against AP2's
 * schema (Schemas.ts), mapped to a grant whose caveats hold each constraint (Mapping.ts) or refused
 * naming every constraint that cannot be held, and built as any grant (`Delegations.build`: the owner
 * signs it and enables it with `POST /delegations`). The mandate's hash is kept on the build (and
 * the grant) and logged on the owner's chain. Nothing is stored for a refused mandate. docs/ap2.md.
 */
import { Context, Duration, Effect, Layer, type Schema } from "effect"
import { Accounts } from "../accounts/Accounts.ts"
import { BadRequest } from "../api/Errors.ts"
import { AuditChain } from "../audit/AuditChain.ts"
import type { BuildError } from "../builds/OperationBuilder.ts"
import { Chains } from "../chain/Chains.ts"
import { Delegations, MinLifetime } from "../delegations/Delegations.ts"
import type { GrantMandate } from "../delegations/Domain.ts"
import type { Signer } from "../delegations/Reads.ts"
import type { NotFound } from "../api/Errors.ts"
import { TokenRegistry } from "../tokens/TokenRegistry.ts"
import type { PaymentMandateBuild, PaymentMandateBuildRequest } from "./Domain.ts"
import { mapMandate } from "./Mapping.ts"
import { mandateHash, validateMandate } from "./Schemas.ts"

export class PaymentMandates extends Context.Service<PaymentMandates, {
  build(signer: Signer, request: PaymentMandateBuildRequest): Effect.Effect<typeof PaymentMandateBuild.Type, BadRequest | NotFound | BuildError>
}>()("ap2/PaymentMandates") {
  static readonly layer = Layer.effect(
    PaymentMandates,
    Effect.gen(function*() {
      const delegations = yield* Delegations
      const tokens = yield* TokenRegistry
      const accounts = yield* Accounts
      const audit = yield* AuditChain
      const chains = yield* Chains
      const minLifetimeMs = Duration.toMillis(yield* MinLifetime)

      const build = Effect.fn("PaymentMandates.build")(function*(signer: Signer, request: PaymentMandateBuildRequest) {
        const checked = validateMandate(request.mandate)
        if ("issues" in checked) {
          return yield* new BadRequest({
            message: `The mandate is not an AP2 open Payment Mandate: ${checked.issues.map((i) => `${i.path} ${i.message}`).join("; ")}`.slice(0, 2000),
            details: { field: "mandate", issues: checked.issues.map((i) => ({ path: `body.${i.path}`, message: i.message })) }
          })
        }
        const mandate = checked.ok
        const mapping = mapMandate(mandate, {
          now: new Date(),
          chainId: request.chainId,
          delegateeAddress: request.delegateeAddress,
          tokens: tokens.all.filter((t) => t.chainId === request.chainId),
          token: request.token,
          expiresAt: request.expiresAt,
          name: request.name,
          accountId: request.accountId,
          minLifetimeMs
        })
        if (mapping._tag === "Refused") {
          return yield* new BadRequest({
            message: `This mandate cannot be held on chain: ${mapping.problems.map((p) => `${p.constraint}: ${p.message}`).join("; ")}`.slice(0, 4000),
            details: {
              field: "mandate",
              constraints: [...new Set(mapping.problems.map((p) => p.constraint))],
              problems: mapping.problems.map((p) => ({ constraint: p.constraint, path: p.path, message: p.message })) as Array<Schema.Json>
            }
          })
        }
        const hash = mandateHash(request.mandate)
        const ref: GrantMandate = { standard: "ap2", vct: mandate.vct, hash, hashAlgorithm: "sha-256", canonicalization: "RFC 8785" }
        const hasReference = mandate.constraints.some((c) => c.type === "payment.reference")
        const note = `These limits carry out AP2 open payment mandate ${hash} (sha-256 of its RFC 8785 form): ` +
          `${mapping.mapped.join("; ")}.` +
          (hasReference ? " Its payment.reference (which checkout it pays for) is not held on chain: only the limits above are." : "")
        const built = yield* delegations.build(signer, { ...mapping.input, mandate: { ref, note } })
        // The owner's log names the mandate the owner was asked to sign for (its hash, in the entry's key).
        const account = yield* accounts.resolve(signer.address, { accountId: request.accountId, chainId: request.chainId })
        yield* audit.append({
          accountId: account.id,
          declineId: `ap2-mandate:${hash}:${built.delegations[0]?.permissionId ?? built.userOpHash}`,
          actor: "owner",
          action: "ap2_mandate_build",
          amount: mapping.input.budgets[0]!.amount,
          token: mapping.input.budgets[0]!.token.symbol,
          chain: chains.nameOf(request.chainId),
          chainId: request.chainId,
          status: "accepted"
        }).pipe(Effect.catchTag("AuditDuplicate", () => Effect.void))
        return { ...built, mandate: ref, mapped: mapping.mapped }
      })

      return PaymentMandates.of({ build })
    })
  )
}
