/**
 * The console in a real browser (Chromium from npm) with a test EIP-1193 wallet that signs with the
 * owner's key and forwards reads to the local chain: after real operations (a grant, the agent's
 * action, an anchor) the page shows the budget gauge, the timeline with the entry proven on chain
 * (checked in the page), a live notification of a decline, and its revoke and freeze go through the
 * wallet and the chain; an approval request arrives live, the wallet approves it (the agent's transfer
 * then executes on chain) and another is denied with the reason typed in the page. Screenshots: .test-results/screenshots/console-*.png.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Schedule } from "effect"
import { createPublicClient, erc20Abi, http, type LocalAccount } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import type { Page } from "puppeteer-core"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { Network } from "../../src/chain/Network.ts"
import { signInMessage } from "../../src/client/signIn.ts"
import { browser, offlinePage, screenshot } from "../support/Browser.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { send, type Ctx } from "../reference/scenario.ts"


type Call = (as: "owner" | "agent", method: string, path: string, body?: unknown) => Promise<{ status: number; body: unknown }>

/** An owner and an agent signed in (fresh keys), the owner's account funded with 100 test USDC. */
const signedInPair = async (baseUrl: string) => {
  const owner = privateKeyToAccount(generatePrivateKey())
  const agent = privateKeyToAccount(generatePrivateKey())
  const ctx: Ctx = { baseUrl, owner, agent, tokens: {}, b: {}, anchorNow: async () => {}, answers: {} }
  const call: Call = (as, method, path, body) => send(ctx, method, path, as, body === undefined ? {} : { body })
  for (const [who, signer] of [["owner", owner], ["agent", agent]] as const) {
    const nonce = (await send(ctx, "post", "/auth/nonce", "none", {})).body as any
    const message = signInMessage(signer, nonce)
    const s = (await send(ctx, "post", "/auth/session", "none", { body: { message, signature: await signer.signMessage({ message }) } })).body as any
    ctx.tokens[who] = s.token
    ctx.b[`${who}Account`] = s.accounts[0].address
  }
  await call("owner", "post", "/dev/faucet", { address: ctx.b.ownerAccount, amount: 100 })
  return { ctx, call, owner, agent }
}

/** The owner's grant to the agent's account through the API (as the walkthrough does): `ctx.b.delegationId`. */
const grantThroughApi = async (ctx: Ctx, call: Call, chainId: number, terms: Record<string, unknown>) => {
  const build = (await call("owner", "post", "/delegations/build", { kind: "agent", delegateeAddress: ctx.b.agentAccount, chainId, ...terms })).body as any
  const leg = build.delegations[0]
  const grant = (await call("owner", "post", "/delegations", {
    userOp: { ...build.enableUserOp, signature: await ctx.owner.signTypedData(build.typedData) },
    userOpHash: build.userOpHash,
    intentType: "delegation_enable",
    delegationSignatures: [{
      permissionId: leg.permissionId,
      signature: await ctx.owner.signTypedData({ ...leg.typedData, message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) } })
    }]
  })).body as any
  assert.strictEqual(grant.status, "active")
  ctx.b.delegationId = grant.id
}

/** Signs a build with `as`'s key, relays it and waits until it settles. */
const relayAs = async (ctx: Ctx, call: Call, as: "owner" | "agent", build: any) => {
  const signer = as === "owner" ? ctx.owner : ctx.agent
  let receipt = (await call(as, "post", "/userops", { ...build.userOp, signature: await signer.signTypedData(build.typedData) })).body as any
  for (let i = 0; i < 150 && receipt.status === "submitted"; i++) {
    await new Promise((r) => setTimeout(r, 200))
    receipt = (await call(as, "get", `/userops/${receipt.userOpId}`)).body
  }
  return receipt
}

/** Finds and clicks in one step in the page: a notification re-renders the lists, which may detach a handle found earlier. */
const clickNow = (page: Page, selector: string) => page.$eval(selector, (b) => (b as HTMLElement).click())

/** The test wallet (EIP-1193): signs with `owner`'s key, forwards everything else to the chain's RPC. */
const injectWallet = async (page: Page, owner: LocalAccount, rpcUrl: string, calls: Array<string>) => {
  await page.exposeFunction("__eip1193", async (method: string, params: Array<any>) => {
    calls.push(method)
    switch (method) {
      case "eth_requestAccounts":
      case "eth_accounts":
        return [owner.address]
      case "personal_sign":
        return owner.signMessage({ message: params[0] as string })
      case "eth_signTypedData_v4":
        return owner.signTypedData(JSON.parse(params[1] as string))
      default: {
        const res = await fetch(rpcUrl, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params })
        })
        const json = (await res.json()) as { result?: unknown; error?: { message: string } }
        if (json.error !== undefined) throw new Error(json.error.message)
        return json.result
      }
    }
  })
  await page.evaluateOnNewDocument(() => {
    const w = window as unknown as { ethereum: unknown; __eip1193: (m: string, p: unknown) => Promise<unknown> }
    w.ethereum = { request: ({ method, params }: { method: string; params?: unknown }) => w.__eip1193(method, params ?? []) }
  })
}

layer(TestServerLive(), { timeout: Duration.seconds(240), excludeTestServices: true })("the console", (it) => {
  it.effect("shows a grant's gauge, the proven timeline and live notifications; revokes and freezes through the wallet", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const anchor = yield* Anchor
      const { ctx, call, owner } = yield* Effect.promise(() => signedInPair(baseUrl))
      yield* Effect.promise(async () => {
        await grantThroughApi(ctx, call, net.chainId, {
          name: "Groceries agent",
          budgets: [{ token: { symbol: "USDC" }, amount: 50, period: { every: "week" } }],
          perActionMax: { token: { symbol: "USDC" }, amount: 20 }
        })
        const action = (await call("agent", "post", `/delegations/${ctx.b.delegationId}/actions`, { recipient: "0x00000000000000000000000000000000000005a1", amount: 12.5 })).body as any
        assert.strictEqual((await relayAs(ctx, call, "agent", action)).status, "included")
      })
      yield* anchor.anchorNow
      // From here the service anchors every second, as its schedule would.
      yield* anchor.anchorNow.pipe(Effect.repeat(Schedule.spaced(Duration.seconds(1))), Effect.forkScoped)

      const b = yield* browser
      const { page, offsite } = yield* offlinePage(b)
      const walletCalls: Array<string> = []
      yield* Effect.promise(async () => {
        await injectWallet(page, owner, net.rpcUrl, walletCalls)
        await page.setViewport({ width: 1280, height: 900 })
        await page.goto(`${baseUrl}/console`, { waitUntil: "networkidle0" })
        await page.click("#wallet")
        await page.waitForSelector(`article.delegation[data-id="${ctx.b.delegationId}"]`, { timeout: 30_000 })
        await page.waitForFunction(
          () => Array.from(document.querySelectorAll("li.entry[data-action=delegated_action] .proof")).some((m) => m.textContent === "proven on chain"),
          { timeout: 60_000 }
        )
      })
      const shown = yield* Effect.promise(() =>
        page.evaluate((id: string) => ({
          who: document.getElementById("who")!.textContent,
          figures: document.querySelector(`article.delegation[data-id="${id}"] .figures`)!.textContent,
          fill: (document.querySelector(`article.delegation[data-id="${id}"] .fill`) as HTMLElement).style.width,
          summary: document.querySelector(`article.delegation[data-id="${id}"] .summary`)!.textContent,
          entries: Array.from(document.querySelectorAll("li.entry")).map((e) => `${e.getAttribute("data-action")} ${e.getAttribute("data-status")}`)
        }), ctx.b.delegationId!)
      )
      yield* screenshot(page, "console-signed-in")
      assert.include(shown.who ?? "", owner.address)
      assert.match(shown.figures ?? "", /^12\.5 of 50 USDC spent, 37\.5 remaining, renews /)
      assert.strictEqual(shown.fill, "25%")
      assert.include(shown.summary ?? "", "may spend at most 50 USDC per week")
      assert.includeMembers(shown.entries, ["delegated_action executed", "delegation_enable executed"])

      // A decline now reaches the page over the SSE stream.
      yield* Effect.promise(async () => {
        const declined = await call("agent", "post", `/delegations/${ctx.b.delegationId}/actions`, { recipient: "0x00000000000000000000000000000000000005a1", amount: 25 })
        assert.strictEqual(declined.status, 422)
        await page.waitForSelector("li.notification.danger", { timeout: 30_000 })
      })
      yield* screenshot(page, "console-notification")

      // Revoke and freeze: built by the service, signed by the wallet, executed on chain.
      yield* Effect.promise(async () => {
        await clickNow(page, `article.delegation[data-id="${ctx.b.delegationId}"] button.revoke`)
        await page.waitForSelector(`article.delegation[data-id="${ctx.b.delegationId}"][data-status=revoked]`, { timeout: 60_000 })
        await clickNow(page, "#freeze")
        await page.waitForSelector("#account[data-frozen=true]", { timeout: 60_000 })
      })
      yield* screenshot(page, "console-revoked-frozen")
      const after = yield* Effect.promise(() => call("owner", "get", `/delegations/${ctx.b.delegationId}`))
      assert.strictEqual((after.body as any).status, "revoked")
      const rules = yield* Effect.promise(() => call("owner", "get", "/account/rules"))
      assert.isTrue((rules.body as any).frozen, "the chain's executed freeze is what the service reports")
      assert.includeMembers(walletCalls, ["personal_sign", "eth_signTypedData_v4", "eth_getTransactionByHash"])
      assert.deepStrictEqual(offsite, [])
    }), { timeout: 240_000 })

  it.effect("lists an approval request live; the wallet approves one (the agent's action then executes) and denies another with its reason", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const { ctx, call, owner } = yield* Effect.promise(() => signedInPair(baseUrl))
      const shop = "0x00000000000000000000000000000000000005a2"
      // The owner's own key is the one approver of transfers above 10 USDC.
      yield* Effect.promise(() =>
        grantThroughApi(ctx, call, net.chainId, {
          name: "Approvals agent",
          budgets: [{ token: { symbol: "USDC" }, amount: 60 }],
          perActionMax: { token: { symbol: "USDC" }, amount: 30 },
          approval: { required: 1, approvers: [owner.address], thresholds: [{ token: { symbol: "USDC" }, amount: 10 }] }
        })
      )
      const ask = async (amount: number) => {
        const held = await call("agent", "post", `/delegations/${ctx.b.delegationId}/actions`, { recipient: shop, amount })
        assert.strictEqual(held.status, 422)
        assert.strictEqual((held.body as any).error.declineReason, "approval_required")
        return (held.body as any).error.details.approvalId as string
      }

      const b = yield* browser
      const { page, offsite } = yield* offlinePage(b)
      const walletCalls: Array<string> = []
      const first = yield* Effect.promise(async () => {
        await injectWallet(page, owner, net.rpcUrl, walletCalls)
        await page.setViewport({ width: 1280, height: 900 })
        await page.goto(`${baseUrl}/console`, { waitUntil: "networkidle0" })
        await page.click("#wallet")
        await page.waitForFunction(() => document.getElementById("approvals")!.textContent!.includes("No approval requests."), { timeout: 30_000 })
        // Asked after the page loaded: it arrives with the notification over the stream.
        const id = await ask(15)
        await page.waitForSelector(`article.approval[data-id="${id}"][data-status=pending] button.approve`, { timeout: 30_000 })
        return id
      })
      const pending = yield* Effect.promise(() =>
        page.evaluate((id: string) => document.querySelector(`article.approval[data-id="${id}"]`)!.textContent, first)
      )
      assert.include(pending ?? "", "15 USDC to")
      assert.include(pending ?? "", "0 of 1 approvals")
      yield* screenshot(page, "console-approval-pending")

      // Approve: the wallet signs the request's EIP-712 Approval; the agent then builds and relays it.
      yield* Effect.promise(async () => {
        await clickNow(page, `article.approval[data-id="${first}"] button.approve`)
        await page.waitForSelector(`article.approval[data-id="${first}"][data-status=approved]`, { timeout: 30_000 })
      })
      const built = yield* Effect.promise(() => call("agent", "post", `/approvals/${first}/build`))
      assert.strictEqual(built.status, 200)
      const receipt = yield* Effect.promise(() => relayAs(ctx, call, "agent", built.body))
      assert.strictEqual(receipt.status, "included")
      const balance = yield* Effect.promise(() => createPublicClient({ transport: http(net.rpcUrl) }).readContract({ address: net.tokens.usd.address, abi: erc20Abi, functionName: "balanceOf", args: [shop] }))
      assert.strictEqual(balance, 15_000_000n, "the approved transfer executed on chain")
      yield* Effect.promise(async () => {
        await clickNow(page, "#refresh")
        await page.waitForSelector(`article.approval[data-id="${first}"][data-status=executed]`, { timeout: 30_000 })
      })

      // Deny: the reason typed in the page is the request's.
      const second = yield* Effect.promise(async () => {
        const id = await ask(16)
        await page.waitForSelector(`article.approval[data-id="${id}"][data-status=pending] input.reason`, { timeout: 30_000 })
        await page.type(`article.approval[data-id="${id}"] input.reason`, "Not this shop again")
        await clickNow(page, `article.approval[data-id="${id}"] button.deny`)
        await page.waitForSelector(`article.approval[data-id="${id}"][data-status=denied]`, { timeout: 30_000 })
        return id
      })
      yield* screenshot(page, "console-approvals-settled")
      const denied = (yield* Effect.promise(() => call("owner", "get", `/approvals/${second}`))).body as any
      assert.strictEqual(denied.status, "denied")
      assert.strictEqual(denied.denial.reason, "Not this shop again")
      assert.strictEqual(denied.denial.by.toLowerCase(), owner.address.toLowerCase())
      const again = yield* Effect.promise(() => call("agent", "post", `/approvals/${second}/build`))
      assert.strictEqual(again.status, 409, "a denied request never builds")
      assert.include(walletCalls, "eth_signTypedData_v4")
      assert.deepStrictEqual(offsite, [])
    }), { timeout: 240_000 })

  it.effect("signs in with a dev key pasted into the page (local network), which never leaves it", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const key = generatePrivateKey()
      const b = yield* browser
      const { page, offsite } = yield* offlinePage(b)
      const sent: Array<string> = []
      page.on("request", (req) => sent.push(`${req.url()} ${req.postData() ?? ""}`))
      yield* Effect.promise(async () => {
        await page.goto(`${baseUrl}/console`, { waitUntil: "networkidle0" })
        // Offered: every served chain is a local network.
        await page.waitForSelector("#devkey-form:not([hidden])", { timeout: 10_000 })
        await page.type("#devkey", key)
        await page.click("#devkey-form button")
        await page.waitForFunction(() => document.getElementById("who")!.textContent!.includes("(dev key)"), { timeout: 30_000 })
        await page.waitForFunction(() => document.getElementById("delegations")!.textContent!.includes("No delegations yet."), { timeout: 30_000 })
      })
      yield* screenshot(page, "console-dev-key")
      const who = yield* Effect.promise(() => page.evaluate(() => document.getElementById("who")!.textContent))
      assert.include(who ?? "", privateKeyToAccount(key).address)
      assert.isFalse(sent.some((line) => line.toLowerCase().includes(key.slice(2).toLowerCase())), "the key is never sent")
      assert.deepStrictEqual(offsite, [])
    }), { timeout: 120_000 })
})
