/** Accounts rows for service-level tests (the audit log references accounts). */
import { Effect } from "effect"
import { SqlClient } from "effect/sql"
import type { AppendInput } from "../../src/audit/AuditChain.ts"
import type { DeclineInput, OutcomeInput } from "../../src/audit/Recorder.ts"

let counter = 0

/** A signer address that no other test uses. */
export const freshSigner = () => `0x${crypto.randomUUID().replace(/-/g, "").padEnd(40, "0").slice(0, 40)}`

/** Inserts an account row directly (no account factory needed) and returns its id. */
export const insertAccount = (signer: string = freshSigner(), index = 0) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const id = `acc_test_${crypto.randomUUID()}`
    const address = `0x${(++counter).toString(16).padStart(8, "0")}${crypto.randomUUID().replace(/-/g, "").slice(0, 32)}`
    yield* sql`
      INSERT INTO accounts (id, signer_address, idx, label, address, chain_id, type, purpose, deployment_status, created_at)
      VALUES (${id}, ${signer}, ${index}, ${"Primary"}, ${address}, 31337, ${"hybrid"}, ${"primary"}, ${"counterfactual"}, now())`
    return id
  }).pipe(Effect.orDie)

export const executed = (accountId: string, operationId: string, extra: Partial<AppendInput> = {}): AppendInput => ({
  accountId,
  operationId,
  actor: "owner",
  action: "send",
  amount: 12.5,
  token: "USDC",
  chain: "local",
  chainId: 31337,
  status: "executed",
  txHash: `0x${"ab".repeat(32)}`,
  delegationId: "del_1",
  ...extra
})

export const declined = (accountId: string, declineId: string, extra: Partial<AppendInput> = {}): AppendInput => ({
  accountId,
  declineId,
  actor: "0x1111111111111111111111111111111111111111",
  action: "delegated_action",
  amount: 1000,
  token: "USDC",
  chain: "local",
  chainId: 31337,
  status: "declined",
  declineReason: "cap_exceeded",
  delegationId: "del_1",
  ...extra
})

/** An executed operation for `AuditRecorder.recordOutcome` (fresh operation id). */
export const outcome = (accountId: string, extra: Partial<OutcomeInput> = {}): OutcomeInput => {
  const { declineId: _d, declineReason: _r, operationId: _o, status: _s, ...base } = executed(accountId, "")
  return { ...base, operationId: `op_${crypto.randomUUID()}`, status: "executed", ...extra }
}

/** A policy decline for `AuditRecorder.recordDecline` (fresh decline id). */
export const decline = (accountId: string, extra: Partial<DeclineInput> = {}): DeclineInput => {
  const { declineId: _d, declineReason: _r, operationId: _o, status: _s, ...base } = declined(accountId, "")
  return { ...base, declineId: `dec_${crypto.randomUUID()}`, declineReason: "cap_exceeded", ...extra }
}
