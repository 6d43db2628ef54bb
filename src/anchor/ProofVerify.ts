/**
 * Checking an entry's inclusion proof (`GET /activity/{eventId}/proof`) without trusting
 * the service: recompute the entry's hash from its fields (Chain.ts, Wire.ts), its RFC
 * 6962 path to the entries root (Rfc6962.ts), the anchored head's leaf and its path to
 * the anchor root (Merkle.ts), then read the anchor transaction over JSON-RPC: its input
 * must be the anchor tag followed by that root, and it must be mined successfully in the
 * stated block of the stated chain. `scripts/audit-verify-proof.ts` is the command.
 */
import { createPublicClient, type Hex, http } from "viem"
import { hashRecord } from "../audit/Chain.ts"
import type { AuditProof } from "../audit/Domain.ts"
import { recordOfEvent } from "../audit/Wire.ts"
import { ANCHOR_TAG, verifyProof as verifyHeadProof } from "../audit/Merkle.ts"
import { verifyInclusion } from "../audit/Rfc6962.ts"

export type ProofResult =
  | { readonly ok: true; readonly checks: ReadonlyArray<string> }
  | { readonly ok: false; readonly checks: ReadonlyArray<string>; readonly failure: string }

const lower = (s: string) => s.toLowerCase()

/** Everything that needs no chain: the entry, the entries root, the anchored leaf, the anchor root. */
export const checkProofOffline = (p: AuditProof): ProofResult => {
  const checks: Array<string> = []
  const fail = (failure: string): ProofResult => ({ ok: false, checks, failure })
  const record = recordOfEvent(p.event)
  const computed = hashRecord(record)
  if (computed !== p.event.hash) return fail(`the entry's fields hash to ${computed}, not its hash ${p.event.hash}`)
  checks.push(`entry #${p.event.index} (${p.event.id}) hashes to ${computed}`)
  const head = p.anchoredHead
  if (head.accountId !== p.event.accountId) return fail(`the anchored head is of ${head.accountId}, not ${p.event.accountId}`)
  if (p.leafIndex !== p.event.index - 1) return fail(`leaf index ${p.leafIndex} is not entry #${p.event.index}'s`)
  if (p.treeSize !== head.length) return fail(`tree size ${p.treeSize} is not the anchored length ${head.length}`)
  if (lower(p.entriesRoot) !== lower(head.entriesRoot)) return fail("the entries root is not the anchored head's")
  if (p.leafIndex === p.treeSize - 1 && lower(head.headHash) !== lower(computed)) {
    return fail(`the entry is the anchored head's last, but the head hash is ${head.headHash}`)
  }
  if (!verifyInclusion(p.leafIndex, p.treeSize, computed, p.auditPath, p.entriesRoot)) {
    return fail(`the audit path does not lead from entry #${p.event.index} to entries root ${p.entriesRoot}`)
  }
  checks.push(`the ${p.auditPath.length}-hash audit path leads to entries root ${p.entriesRoot} (tree of ${p.treeSize})`)
  const leaf = { ...head, headHash: head.headHash as Hex, entriesRoot: head.entriesRoot as Hex }
  if (!verifyHeadProof(leaf, p.anchor.proof as ReadonlyArray<Hex>, lower(p.anchor.merkleRoot) as Hex)) {
    return fail(`the anchored head's proof does not lead to the anchor root ${p.anchor.merkleRoot}`)
  }
  checks.push(`the anchored head (${head.accountId}, ${head.length}, ${head.headHash}) is under root ${p.anchor.merkleRoot}`)
  return { ok: true, checks }
}

/** The offline checks, then the anchor transaction read from `rpcUrl`. */
export const verifyProofOnChain = async (p: AuditProof, rpcUrl: string): Promise<ProofResult> => {
  const offline = checkProofOffline(p)
  if (!offline.ok) return offline
  const checks = [...offline.checks]
  const fail = (failure: string): ProofResult => ({ ok: false, checks, failure })
  const client = createPublicClient({ transport: http(rpcUrl) })
  const chainId = await client.getChainId()
  if (chainId !== p.anchor.chainId) return fail(`the RPC serves chain ${chainId}, the anchor is on chain ${p.anchor.chainId}`)
  const hash = p.anchor.txHash as Hex
  const tx = await client.getTransaction({ hash }).catch(() => undefined)
  if (tx === undefined) return fail(`anchor transaction ${hash} is not on chain ${chainId}`)
  const expected = lower(`${ANCHOR_TAG}${p.anchor.merkleRoot.slice(2)}`)
  if (lower(tx.input) !== expected) return fail(`anchor transaction ${hash} carries ${tx.input}, not ${expected}`)
  const receipt = await client.getTransactionReceipt({ hash }).catch(() => undefined)
  if (receipt === undefined) return fail(`anchor transaction ${hash} is not mined`)
  if (receipt.status !== "success") return fail(`anchor transaction ${hash} reverted`)
  if (receipt.blockNumber.toString() !== p.anchor.blockNumber) {
    return fail(`anchor transaction ${hash} is in block ${receipt.blockNumber}, not ${p.anchor.blockNumber}`)
  }
  checks.push(`transaction ${hash} (block ${receipt.blockNumber}, chain ${chainId}) commits root ${p.anchor.merkleRoot}`)
  return { ok: true, checks }
}
