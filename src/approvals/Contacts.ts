/**
 * Approvers who are not signers of this service (docs/approvals.md "Approvers who do not sign in
 * here"): the owner registers a signed webhook for an approver its grants name. Each one is a
 * webhook endpoint of the notifications feature under a contact identity of its own,
 * `approver:<owner>:<approver>` (no session can ever be that identity), so an approval request's
 * notification to it travels the same outbox, retries, signature and dead-lettering as every
 * webhook, and reaches only the URL that owner registered, with that owner's requests only.
 */
import { Context, Effect, Layer } from "effect"
import { BadRequest, NotFound } from "../api/Errors.ts"
import type { Signer } from "../delegations/Reads.ts"
import { Webhooks } from "../notifications/webhooks/Webhooks.ts"
import { ApprovalRepo } from "./ApprovalRepo.ts"

const lower = (s: string) => s.toLowerCase()
export const contactIdentity = (owner: string, approver: string) => `approver:${lower(owner)}:${lower(approver)}`
const approverOf = (identity: string) => identity.split(":")[2] ?? ""

const make = Effect.gen(function*() {
  const webhooks = yield* Webhooks
  const repo = yield* ApprovalRepo

  const create = Effect.fn("ApproverContacts.create")(function*(signer: Signer, input: { readonly approver: string; readonly url: string }) {
    const owner = lower(signer.address)
    const approver = lower(input.approver)
    if (!(yield* repo.namesApprover(owner, approver))) {
      return yield* new BadRequest({ message: `approver: ${input.approver} is not an approver of any of your grants`, details: { field: "approver" } })
    }
    const endpoint = yield* webhooks.create(contactIdentity(owner, approver), input.url)
    return { ...endpoint, approver }
  })

  const list = Effect.fn("ApproverContacts.list")(function*(signer: Signer) {
    const rows = yield* repo.contactsOf(lower(signer.address))
    return rows.map((r) => ({ id: r.id, approver: approverOf(r.identity), url: r.url, createdAt: r.created_at.toISOString() }))
  })

  const remove = Effect.fn("ApproverContacts.remove")(function*(signer: Signer, id: string) {
    const row = (yield* repo.contactsOf(lower(signer.address))).find((r) => r.id === id)
    if (row === undefined) return yield* new NotFound({ message: `No approver contact ${id}` })
    yield* webhooks.remove(row.identity, id)
  })

  /** The contact identities among `approvers` that the owner gave a webhook (each told what the approvers are told). */
  const reachable = (owner: string, approvers: ReadonlyArray<string>) =>
    repo.liveIdentities(approvers.map((a) => contactIdentity(owner, a)))

  return { create, list, remove, reachable }
})

export class ApproverContacts extends Context.Service<ApproverContacts, Effect.Success<typeof make>>()("das/approvals/ApproverContacts") {
  static readonly layer = Layer.effect(ApproverContacts, make).pipe(Layer.provide(Layer.mergeAll(Webhooks.layer, ApprovalRepo.layer)))
}
