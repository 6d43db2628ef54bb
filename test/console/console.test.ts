/**
 * The console in a real browser (Chromium from npm) with a test EIP-1193 wallet that signs with the
 * owner's key (viem, in node) and forwards reads to the local chain. A person's walk: sign in with the
 * wallet, create a grant in the form (its summary shown before signing), watch the agent act and the
 * bar move, see a held transfer at the top and its amount RESERVED on the card, approve it (the
 * transfer then executes on chain), deny another, accept the agent's request for more (the old grant
 * disabled on chain), revoke (disabled on chain), freeze and unfreeze (read back from the chain); the
 * activity with its proof checked one click away, and never a proof asked before its anchor.
 * Each view: a screenshot in .test-results/screenshots/, axe-core, no overflow at 390 px.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect, Schedule } from "effect"
import { createPublicClient, erc20Abi, http } from "viem"
import type { Page } from "puppeteer-core"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { Network } from "../../src/chain/Network.ts"
import { browser, offlinePage } from "../support/Browser.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { disabledOnChain } from "../delegations/helpers.ts"
import { clickNow, injectWallet, look, relayAs, signedInPair, textOf, watchPage } from "./support.ts"

const shop = "0x00000000000000000000000000000000000005a3"

/** The card of grant `id`: its figures for `token`. */
const figures = (page: Page, id: string) =>
  page.evaluate((gid: string) => {
    const card = document.querySelector(`article.delegation[data-id="${gid}"]`)
    const dd = (c: string) => card?.querySelector(`.budget dd.${c}`)?.textContent ?? ""
    return {
      spent: dd("spent"),
      reserved: dd("reserved"),
      left: dd("left"),
      spentBar: (card?.querySelector(".fill.spent") as HTMLElement | null)?.style.width ?? "",
      reservedBar: (card?.querySelector(".fill.reserved") as HTMLElement | null)?.style.width ?? "",
      name: card?.querySelector(".name")?.textContent ?? "",
      terms: card?.querySelector(".terms")?.textContent ?? ""
    }
  }, id)

layer(TestServerLive(), { timeout: Duration.seconds(300), excludeTestServices: true })("the console", (it) => {
  it.effect("a person's walk with a wallet: grant, act, approve, deny, top-up, revoke, freeze; each step on screen and on chain", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const anchor = yield* Anchor
      const { ctx, call, owner } = yield* Effect.promise(() => signedInPair(baseUrl))
      // The service anchors every second from here, as its schedule would.
      yield* anchor.anchorNow.pipe(Effect.repeat(Schedule.spaced(Duration.seconds(1))), Effect.forkScoped)
      const b = yield* browser
      const { page, offsite } = yield* offlinePage(b)
      const seen = watchPage(page)
      const walletCalls: Array<string> = []
      const usdc = createPublicClient({ transport: http(net.rpcUrl) })
      const balanceOf = (who: `0x${string}`) => usdc.readContract({ address: net.tokens.usd.address, abi: erc20Abi, functionName: "balanceOf", args: [who] })

      // Sign in with the wallet.
      yield* Effect.promise(async () => {
        await injectWallet(page, owner, net.rpcUrl, walletCalls)
        await page.setViewport({ width: 1280, height: 900 })
        await page.goto(`${baseUrl}/console`, { waitUntil: "networkidle0" })
        await look(page, "#overview", "#wallet:not([disabled])", "console-sign-in")
        await page.click("#wallet")
        await page.waitForSelector("#accounts article.chain", { timeout: 30_000 })
      })
      const who = yield* Effect.promise(() => textOf(page, "#who"))
      assert.include(who, "(wallet)")
      // The first view is drawn before the balances arrive (docs/console.md): wait for them, then read.
      const balancesAt = `#accounts article.chain[data-chain-id="${net.chainId}"] .balances`
      yield* Effect.promise(() =>
        page.waitForFunction((s: string) => (document.querySelector(s)?.textContent ?? "").includes("USDC"), { timeout: 30_000 }, balancesAt)
      )
      const balances = yield* Effect.promise(() => textOf(page, balancesAt))
      assert.include(balances, "USDC100", "the account's USDC balance, read from the chain")

      // Create a grant in the form: the summary is shown before anything is signed.
      yield* Effect.promise(async () => {
        await page.evaluate(() => void (location.hash = "#new-grant"))
        await page.waitForSelector("#grant-form")
        await page.type("#grant-name", "Groceries agent")
        await page.type("#grant-agent", ctx.b.agentAccount!)
        await page.type("#grant-amount", "40")
        await page.type("#grant-perAction", "20")
        await page.type("#grant-recipients", `shop, ${shop}`)
        await page.type("#grant-threshold", "10")
        await look(page, "#new-grant", "#grant-form", "console-new-grant")
        await page.click("#grant-form button[type=submit]")
        await page.waitForSelector("#grant-preview", { timeout: 60_000 })
      })
      const preview = yield* Effect.promise(() => textOf(page, "#grant-preview"))
      assert.include(preview, "Budget 40 USDC in total")
      assert.include(preview, "20 USDC per action")
      assert.include(preview, "“shop”")
      assert.notInclude(walletCalls, "eth_signTypedData_v4", "nothing signed before the person has read it")
      yield* Effect.promise(() => look(page, "#new-grant", "#grant-preview", "console-grant-preview"))
      const grantId = yield* Effect.promise(async () => {
        await clickNow(page, "#grant-preview button.sign-grant")
        await page.waitForSelector("#agents article.delegation[data-status=active]", { timeout: 90_000 })
        const list = (await call("owner", "get", "/delegations")).body as Array<any>
        assert.strictEqual(list.length, 1)
        assert.strictEqual(list[0].status, "active")
        return list[0].id as string
      })
      const grant = (yield* Effect.promise(() => call("owner", "get", `/delegations/${grantId}`))).body
      assert.isFalse(yield* disabledOnChain(grant.permissionId), "the grant is live on chain")
      let shown = yield* Effect.promise(() => figures(page, grantId))
      assert.strictEqual(shown.name, "“Groceries agent”")
      assert.strictEqual(shown.left, "40 USDC")
      assert.include(shown.terms, "At most 20 USDC per action")
      assert.include(shown.terms, "Only to “shop”")

      // The agent acts: the bar moves without a reload (the notification stream).
      yield* Effect.promise(async () => {
        const action = (await call("agent", "post", `/delegations/${grantId}/actions`, { recipient: shop, amount: 5 })).body
        assert.strictEqual((await relayAs(ctx, call, "agent", action)).status, "included")
        await page.waitForFunction((id: string) => document.querySelector(`article.delegation[data-id="${id}"] dd.spent`)?.textContent === "5 USDC", { timeout: 30_000 }, grantId)
      })
      shown = yield* Effect.promise(() => figures(page, grantId))
      assert.strictEqual(shown.spentBar, "12.5%")
      assert.strictEqual(shown.left, "35 USDC")
      assert.strictEqual(yield* Effect.promise(() => balanceOf(shop)), 5_000_000n)

      // A transfer above the threshold is held: at the top, and RESERVED on the card.
      const held = yield* Effect.promise(async () => {
        const answer = await call("agent", "post", `/delegations/${grantId}/actions`, { recipient: shop, amount: 15 })
        assert.strictEqual(answer.body.error.declineReason, "approval_required")
        const id = answer.body.error.details.approvalId as string
        await page.waitForSelector(`#inbox article.approval[data-id="${id}"][data-status=pending] button.approve`, { timeout: 30_000 })
        await page.waitForFunction((gid: string) => document.querySelector(`article.delegation[data-id="${gid}"] dd.reserved`)?.textContent === "15 USDC", { timeout: 30_000 }, grantId)
        return id
      })
      shown = yield* Effect.promise(() => figures(page, grantId))
      assert.strictEqual(shown.reservedBar, "37.5%")
      assert.strictEqual(shown.left, "20 USDC")
      const heldText = yield* Effect.promise(() => textOf(page, `article.approval[data-id="${held}"]`))
      assert.include(heldText, "15 USDC to")
      assert.include(heldText, "“shop”")
      assert.include(heldText, "0 of 1 approvals")
      assert.include(heldText, "“Groceries agent”")
      const order = yield* Effect.promise(() => page.evaluate(() => Array.from(document.querySelectorAll("main > section")).map((s) => s.id)))
      assert.strictEqual(order[0], "inbox", "what waits for the owner comes first")
      yield* Effect.promise(() => look(page, "#overview", `article.approval[data-id="${held}"]`, "console-approval-pending"))

      // Approve in the page; the agent builds and relays; the chain moves the money.
      yield* Effect.promise(async () => {
        await clickNow(page, `article.approval[data-id="${held}"] button.approve`)
        await page.waitForSelector(`article.approval[data-id="${held}"][data-status=approved]`, { timeout: 30_000 })
        const built = await call("agent", "post", `/approvals/${held}/build`)
        assert.strictEqual(built.status, 200)
        assert.strictEqual((await relayAs(ctx, call, "agent", built.body)).status, "included")
      })
      assert.strictEqual(yield* Effect.promise(() => balanceOf(shop)), 20_000_000n, "the approved transfer executed on chain")

      // Deny another with a reason typed in the page.
      const denied = yield* Effect.promise(async () => {
        const id = (await call("agent", "post", `/delegations/${grantId}/actions`, { recipient: shop, amount: 16 })).body.error.details.approvalId as string
        await page.waitForSelector(`article.approval[data-id="${id}"][data-status=pending] input.reason`, { timeout: 30_000 })
        await page.type(`article.approval[data-id="${id}"] input.reason`, "Not this shop again")
        await clickNow(page, `article.approval[data-id="${id}"] button.deny`)
        await page.waitForSelector(`article.approval[data-id="${id}"][data-status=denied]`, { timeout: 30_000 })
        return id
      })
      const denial = (yield* Effect.promise(() => call("owner", "get", `/approvals/${denied}`))).body
      assert.strictEqual(denial.denial.reason, "Not this shop again")
      assert.strictEqual((yield* Effect.promise(() => call("agent", "post", `/approvals/${denied}/build`))).status, 409)

      // The agent asks for more; accepted in the page, the chain disables the old grant for the new one.
      const topUp = yield* Effect.promise(async () => {
        const asked = await call("agent", "post", "/approvals/changes", {
          delegationId: grantId,
          changes: { budgets: [{ token: { symbol: "USDC" }, amount: 80 }] },
          reason: "Prices went up"
        })
        assert.strictEqual(asked.status, 201, JSON.stringify(asked.body))
        const id = asked.body.id as string
        await page.waitForSelector(`#inbox article.topup[data-id="${id}"] button.accept`, { timeout: 30_000 })
        return id
      })
      const topUpText = yield* Effect.promise(() => textOf(page, `article.topup[data-id="${topUp}"]`))
      assert.include(topUpText, "40 USDC → 80 USDC")
      assert.include(topUpText, "“Prices went up”")
      yield* Effect.promise(() => look(page, "#overview", `article.topup[data-id="${topUp}"]`, "console-top-up"))
      const replaced = yield* Effect.promise(async () => {
        await clickNow(page, `article.topup[data-id="${topUp}"] button.accept`)
        await page.waitForSelector(`article.topup[data-id="${topUp}"][data-status=accepted]`, { timeout: 90_000 })
        return (await call("owner", "get", `/approvals/changes/${topUp}`)).body.newDelegationId as string
      })
      assert.isTrue(yield* disabledOnChain(grant.permissionId), "the old grant is disabled on chain")
      const fresh = (yield* Effect.promise(() => call("owner", "get", `/delegations/${replaced}`))).body
      assert.strictEqual(fresh.status, "active")
      yield* Effect.promise(() => page.waitForSelector(`article.delegation[data-id="${replaced}"]`, { timeout: 30_000 }))
      shown = yield* Effect.promise(() => figures(page, replaced))
      assert.strictEqual(shown.left, "60 USDC", "80 in all, 20 already spent carried over")

      // Revoke in the page: disabled on chain.
      yield* Effect.promise(async () => {
        await clickNow(page, `article.delegation[data-id="${replaced}"] button.revoke`)
        await page.waitForSelector(`article.delegation[data-id="${replaced}"][data-status=revoked]`, { timeout: 90_000 })
      })
      assert.isTrue(yield* disabledOnChain(fresh.permissionId), "the revoked grant is disabled on chain")

      // Freeze, then unfreeze: what the service reads back from the chain.
      const chainCard = `#accounts article.chain[data-chain-id="${net.chainId}"]`
      yield* Effect.promise(async () => {
        await clickNow(page, `${chainCard} button.freeze`)
        await page.waitForSelector(`${chainCard}[data-frozen=true]`, { timeout: 90_000 })
      })
      assert.isTrue((yield* Effect.promise(() => call("owner", "get", `/account/rules?chainId=${net.chainId}`))).body.frozen)
      yield* Effect.promise(() => look(page, "#overview", `${chainCard}[data-frozen=true]`, "console-frozen"))
      yield* Effect.promise(async () => {
        await clickNow(page, `${chainCard} button.unfreeze`)
        await page.waitForSelector(`${chainCard}[data-frozen=false]`, { timeout: 90_000 })
      })
      assert.isFalse((yield* Effect.promise(() => call("owner", "get", `/account/rules?chainId=${net.chainId}`))).body.frozen)

      // Activity: the proof one click away once anchored, checked through the wallet's RPC.
      yield* Effect.promise(async () => {
        await page.evaluate(() => void (location.hash = "#activity"))
        await page.waitForSelector("li.entry[data-action=delegated_action] button.proof-check", { timeout: 60_000 })
        await clickNow(page, "li.entry[data-action=delegated_action] button.proof-check")
        await page.waitForFunction(
          () => Array.from(document.querySelectorAll("li.entry[data-action=delegated_action] .proof")).some((m) => m.textContent === "proven on chain"),
          { timeout: 60_000 }
        )
      })
      const entries = yield* Effect.promise(() => page.$$eval("li.entry .what", (es) => es.map((e) => e.textContent ?? "")))
      assert.include(entries, "“Groceries agent” paid 5 USDC to “shop”", "the actor and the recipient by name, the amount with its token")
      assert.include(entries, "You granted")
      yield* Effect.promise(() => look(page, "#activity", "li.entry", "console-activity"))

      // A phone: the same views at 390 px.
      yield* Effect.promise(async () => {
        await page.setViewport({ width: 390, height: 844 })
        await look(page, "#overview", "#agents", "console-phone-overview")
        await look(page, "#activity", "li.entry", "console-phone-activity")
        await look(page, "#new-grant", "#grant-form", "console-phone-new-grant")
        await look(page, "#safety", "#safety article.safety", "console-phone-safety")
      })
      assert.includeMembers(walletCalls, ["personal_sign", "eth_signTypedData_v4", "eth_getTransactionByHash"])
      assert.deepStrictEqual(seen.failed.filter((f) => f.startsWith("409") || f.includes("/proof")), [], "no proof asked before its anchor")
      assert.deepStrictEqual(seen.errors, [])
      assert.deepStrictEqual(offsite, [])
    }), { timeout: 300_000 })
})
