/**
 * The console in the browser (bundled by the service with esbuild from npm: no internet build step).
 * Sign in with an injected EIP-1193 wallet or, on the local network, a dev key; the owner's
 * delegations with budget gauges; the activity timeline, each entry's proof checked here (the
 * entry's hash, its path, the anchor root, and the anchor transaction read through the wallet);
 * live notifications over the SSE stream; approval requests the signer may approve or deny (the
 * approval signed by the wallet); revoke and account freeze, signed by the wallet.
 */
import { createSiweMessage } from "viem/siwe"
import type { Hex, LocalAccount } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { checkProofOffline } from "../anchor/ProofVerify.ts"
import { ANCHOR_TAG } from "../audit/Merkle.ts"
import type { AuditProof } from "../audit/Domain.ts"

interface Eip1193 {
  request(args: { method: string; params?: ReadonlyArray<unknown> }): Promise<any>
}
interface Signer {
  readonly address: Hex
  readonly kind: "wallet" | "dev key"
  signMessage(message: string): Promise<Hex>
  signTypedData(typedData: any): Promise<Hex>
  /** Reads the chain (the wallet's RPC); absent for a dev key. */
  readonly rpc?: (method: string, params: ReadonlyArray<unknown>) => Promise<any>
}

const $ = (id: string) => document.getElementById(id)!
const el = (tag: string, attrs: Record<string, string> = {}, ...children: Array<Node | string>) => {
  const node = document.createElement(tag)
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v)
  node.append(...children)
  return node
}
const state: { signer?: Signer; token?: string } = {}
/** Reasons typed to deny, kept across re-renders (a notification re-renders the list). */
const reasons = new Map<string, string>()

const api = async (method: string, path: string, body?: unknown): Promise<any> => {
  const res = await fetch(path, {
    method,
    headers: {
      ...(state.token === undefined ? {} : { authorization: `Bearer ${state.token}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const text = await res.text()
  const json = text === "" ? undefined : JSON.parse(text)
  if (!res.ok) throw Object.assign(new Error(json?.error?.message ?? `${res.status}`), { status: res.status, body: json })
  return json
}

const status = (text: string) => {
  $("status").textContent = text
}

const walletSigner = async (provider: Eip1193): Promise<Signer> => {
  const [address] = await provider.request({ method: "eth_requestAccounts" })
  return {
    address,
    kind: "wallet",
    signMessage: (message) => provider.request({ method: "personal_sign", params: [message, address] }),
    signTypedData: (typedData) =>
      provider.request({ method: "eth_signTypedData_v4", params: [address, JSON.stringify(typedData, (_k, v) => (typeof v === "bigint" ? v.toString() : v))] }),
    rpc: (method, params) => provider.request({ method, params })
  }
}

const devKeySigner = (key: Hex): Signer => {
  const account: LocalAccount = privateKeyToAccount(key)
  return {
    address: account.address,
    kind: "dev key",
    signMessage: (message) => account.signMessage({ message }),
    signTypedData: (typedData) => account.signTypedData!(typedData)
  }
}

const signIn = async (signer: Signer) => {
  const nonce = await api("POST", "/auth/nonce")
  const message = createSiweMessage({
    address: signer.address,
    chainId: nonce.chainId,
    domain: nonce.domain,
    uri: nonce.uri,
    nonce: nonce.nonce,
    version: "1",
    issuedAt: new Date(),
    statement: "Sign in to the delegated-authority service."
  })
  const session = await api("POST", "/auth/session", { message, signature: await signer.signMessage(message) })
  state.signer = signer
  state.token = session.token
  $("who").textContent = `${signer.address} (${signer.kind})`
  $("signin").hidden = true
  $("app").hidden = false
  await refresh()
  void listen()
}

/** Signs a build's typed data with the signer, relays it, and waits until it settles. */
const signAndRelay = async (build: any) => {
  const signature = await state.signer!.signTypedData(build.typedData)
  let receipt = await api("POST", "/userops", { ...build.userOp, signature })
  for (let i = 0; i < 150 && receipt.status === "submitted"; i++) {
    await new Promise((r) => setTimeout(r, 300))
    receipt = await api("GET", `/userops/${receipt.userOpId}`)
  }
  return receipt
}

const gauge = (s: any) => {
  const share = s.limit > 0 ? Math.min(100, (100 * s.spent) / s.limit) : 0
  // Through the CSSOM: the page's Content-Security-Policy refuses `style` attributes written at run time.
  const fill = el("div", { class: "fill" })
  fill.style.width = `${share}%`
  return el(
    "div",
    { class: "gauge", "data-token": s.token.symbol },
    el("div", { class: "bar" }, fill),
    el(
      "div",
      { class: "figures" },
      `${s.spent} of ${s.limit} ${s.token.symbol} spent, ${s.remaining} remaining` +
        (s.resetsAt === undefined ? "" : `, renews ${new Date(s.resetsAt).toUTCString()}`)
    )
  )
}

const renderDelegations = (list: ReadonlyArray<any>) => {
  const root = $("delegations")
  root.replaceChildren()
  if (list.length === 0) root.append(el("p", { class: "empty" }, "No delegations yet."))
  for (const d of list) {
    const revoke = el("button", { class: "revoke" }, "Revoke") as HTMLButtonElement
    revoke.disabled = d.status !== "active"
    revoke.onclick = () =>
      act(`Revoking ${d.name}`, async () => {
        await signAndRelay(await api("POST", `/delegations/${d.id}/revoke`))
      })
    root.append(
      el(
        "article",
        { class: "delegation", "data-id": d.id, "data-status": d.status },
        el("h3", {}, `${d.name} `, el("span", { class: `badge ${d.status}` }, d.status)),
        el("p", { class: "summary" }, d.humanSummary),
        ...d.spentToDate.map(gauge),
        revoke
      )
    )
  }
}

/** The entry's proof checked here: offline checks, then the anchor transaction through the wallet's RPC. */
const proveEntry = async (eventId: string): Promise<{ mark: string; ok: boolean }> => {
  let proof: AuditProof
  try {
    proof = await api("GET", `/activity/${eventId}/proof`)
  } catch (e: any) {
    if (e.status === 409) return { mark: "not anchored yet", ok: false }
    throw e
  }
  const offline = checkProofOffline(proof)
  if (!offline.ok) return { mark: `proof fails: ${offline.failure}`, ok: false }
  const rpc = state.signer?.rpc
  if (rpc === undefined) return { mark: "proof checks (anchor transaction not read: no wallet RPC)", ok: false }
  const tx = await rpc("eth_getTransactionByHash", [proof.anchor.txHash])
  const receipt = await rpc("eth_getTransactionReceipt", [proof.anchor.txHash])
  const expected = `${ANCHOR_TAG}${proof.anchor.merkleRoot.slice(2)}`.toLowerCase()
  if (tx === null || receipt === null || receipt.status !== "0x1") return { mark: "anchor transaction not found", ok: false }
  if (String(tx.input).toLowerCase() !== expected) return { mark: "the anchor transaction commits another root", ok: false }
  return { mark: "proven on chain", ok: true }
}

const renderActivity = async (items: ReadonlyArray<any>) => {
  const root = $("activity")
  root.replaceChildren()
  if (items.length === 0) root.append(el("p", { class: "empty" }, "No activity yet."))
  for (const e of items) {
    const mark = el("span", { class: "proof pending" }, "checking…")
    root.append(
      el(
        "li",
        { class: "entry", "data-id": e.id, "data-action": e.action, "data-status": e.status },
        el("time", {}, `${e.dateLabel} ${e.timeLabel}`),
        ` ${e.action.replace(/_/g, " ")} · ${e.status}`,
        e.amount === undefined ? "" : ` · ${e.amount} ${e.token}`,
        e.declineReason === undefined ? "" : ` · ${e.declineReason}`,
        " ",
        mark
      )
    )
    proveEntry(e.id).then(
      (r) => {
        mark.textContent = r.mark
        mark.className = `proof ${r.ok ? "proven" : "unproven"}`
      },
      (err) => {
        mark.textContent = `proof not checked: ${String(err)}`
        mark.className = "proof unproven"
      }
    )
  }
}

/** The signer's approval requests (newest first): pending ones with approve (if it is a named approver) and deny. */
const renderApprovals = (list: ReadonlyArray<any>) => {
  const root = $("approvals")
  root.replaceChildren()
  const shown = list.slice(0, 10)
  if (shown.length === 0) root.append(el("p", { class: "empty" }, "No approval requests."))
  const me = state.signer!.address.toLowerCase()
  for (const r of shown) {
    const approvers = (r.approvers as ReadonlyArray<string>).map((a) => a.toLowerCase())
    const approved = (r.approvals as ReadonlyArray<{ approver: string }>).map((a) => a.approver.toLowerCase())
    const actions = el("div", { class: "actions" })
    if (r.status === "pending") {
      if (approvers.includes(me) && !approved.includes(me)) {
        const approve = el("button", { class: "approve" }, "Approve (sign)") as HTMLButtonElement
        // What the ApprovalEnforcer checks on chain: the wallet signs the request's EIP-712 `Approval`.
        approve.onclick = () =>
          act("Approving", async () => {
            const signature = await state.signer!.signTypedData(r.toSign)
            await api("POST", `/approvals/${r.id}/approve`, { signature })
          })
        actions.append(approve)
      }
      const reason = el("input", { class: "reason", placeholder: "Reason to deny", maxlength: "500" }) as HTMLInputElement
      reason.value = reasons.get(r.id) ?? ""
      reason.oninput = () => reasons.set(r.id, reason.value)
      const deny = el("button", { class: "deny" }, "Deny") as HTMLButtonElement
      deny.onclick = () =>
        act("Denying", async () => {
          await api("POST", `/approvals/${r.id}/deny`, { reason: reason.value.trim() === "" ? "Denied in the console" : reason.value.trim() })
        })
      actions.append(reason, deny)
    }
    root.append(
      el(
        "article",
        { class: "approval", "data-id": r.id, "data-status": r.status },
        el("h3", {}, `${r.amount} ${r.token.symbol} to ${r.recipientName ?? r.recipient} `, el("span", { class: `badge ${r.status}` }, r.status)),
        el("p", { class: "summary" }, r.summary),
        el(
          "div",
          { class: "figures" },
          `${r.approvals.length} of ${r.required} approvals · agent ${r.agent} · until ${new Date(r.deadline).toUTCString()}` +
            (r.denial === undefined ? "" : ` · denied: ${r.denial.reason}`)
        ),
        actions
      )
    )
  }
}

const refresh = async () => {
  const [delegations, activity, rules, approvals] = await Promise.all([
    api("GET", "/delegations"),
    api("GET", "/activity?limit=20"),
    api("GET", "/account/rules"),
    api("GET", "/approvals")
  ])
  renderDelegations(delegations)
  renderApprovals(approvals)
  await renderActivity(activity.items)
  $("account").textContent = `Account ${rules.address}: ${rules.frozen ? "frozen" : "active"}`
  $("account").dataset.frozen = String(rules.frozen)
  ;($("freeze") as HTMLButtonElement).textContent = rules.frozen ? "Unfreeze account" : "Freeze account"
  $("freeze").dataset.intent = rules.frozen ? "account_unfreeze" : "account_freeze"
}

const act = async (what: string, f: () => Promise<void>) => {
  status(`${what}…`)
  try {
    await f()
    status(`${what}: done`)
  } catch (e) {
    status(`${what}: ${String((e as Error).message)}`)
  }
  await refresh()
}

/** The SSE stream read with fetch (EventSource cannot send the bearer header). */
const listen = async () => {
  const res = await fetch("/notifications/stream", { headers: { authorization: `Bearer ${state.token}`, accept: "text/event-stream" } })
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += value
    let cut: number
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 2)
      const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n")
      if (data === "") continue
      const n = JSON.parse(data)
      $("notifications").prepend(el("li", { class: `notification ${n.tone}`, "data-id": n.id }, el("strong", {}, n.title), ` ${n.body}`))
      void refresh()
    }
  }
}

const main = () => {
  const provider = (window as unknown as { ethereum?: Eip1193 }).ethereum
  const wallet = $("wallet") as HTMLButtonElement
  wallet.disabled = provider === undefined
  if (provider === undefined) wallet.title = "No injected wallet (EIP-1193) found"
  wallet.onclick = () => {
    walletSigner(provider!).then(signIn).catch((e) => status(`Sign-in failed: ${String(e)}`))
  }
  $("devkey-form").onsubmit = (ev) => {
    ev.preventDefault()
    const key = ($("devkey") as HTMLInputElement).value.trim() as Hex
    signIn(devKeySigner(key)).catch((e) => status(`Sign-in failed: ${String(e)}`))
  }
  $("freeze").onclick = () =>
    act($("freeze").textContent ?? "Freeze", async () => {
      await signAndRelay(await api("POST", "/account/rules/build", { intentType: $("freeze").dataset.intent }))
    })
  $("refresh").onclick = () => void refresh()
  void fetch("/console/config").then((r) => r.json()).then((c: { devKeySignIn: boolean }) => {
    $("devkey-form").hidden = !c.devKeySignIn
  })
}

window.addEventListener("DOMContentLoaded", main)
