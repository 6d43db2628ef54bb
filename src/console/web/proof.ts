/**
 * An activity entry's proof, checked in the page: its hash, its path to the account's anchored
 * root, the anchor's Merkle proof (offline), then the anchor transaction read through the wallet's RPC.
 * Asked only for an entry an anchor already covers (`GET /activity/anchor`'s `accounts`), so the page
 * never asks for a proof that cannot exist yet.
 */
import { checkProofOffline } from "../../anchor/ProofVerify.ts"
import { ANCHOR_TAG } from "../../audit/Merkle.ts"
import type { AuditProof } from "../../audit/Domain.ts"
import type { Session } from "./session.ts"

export interface ProofResult {
  readonly ok: boolean
  readonly text: string
  readonly txHash?: string
}

export const checkProof = async (session: Session, eventId: string): Promise<ProofResult> => {
  const proof: AuditProof = await session.call("GET", `/activity/${eventId}/proof`)
  const offline = checkProofOffline(proof)
  if (!offline.ok) return { ok: false, text: `proof fails: ${offline.failure}` }
  const rpc = session.signer.rpc
  if (rpc === undefined) {
    return { ok: true, text: "proof checks against the anchored root (anchor transaction not read: a dev key has no RPC)", txHash: proof.anchor.txHash }
  }
  const tx = await rpc("eth_getTransactionByHash", [proof.anchor.txHash])
  const receipt = await rpc("eth_getTransactionReceipt", [proof.anchor.txHash])
  const expected = `${ANCHOR_TAG}${proof.anchor.merkleRoot.slice(2)}`.toLowerCase()
  if (tx === null || receipt === null || receipt.status !== "0x1") return { ok: false, text: "anchor transaction not found" }
  if (String(tx.input).toLowerCase() !== expected) return { ok: false, text: "the anchor transaction commits another root" }
  return { ok: true, text: "proven on chain", txHash: proof.anchor.txHash }
}
