/**
 * The console with the development key (no wallet in the browser), used from the keyboard: the wallet
 * button says why it cannot be used, the key is typed in a password field and never leaves the page;
 * then the account's safety set up in the page (a safe address, a panic key, guardians), each read back
 * from the chain by the service; an activity entry shows "not anchored yet" (no proof asked) until an
 * anchor covers it, then its proof is one click away.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Anchor } from "../../src/anchor/Anchor.ts"
import { Network } from "../../src/chain/Network.ts"
import { browser, offlinePage } from "../support/Browser.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { look, signedInPair, textOf, until, watchPage } from "./support.ts"

layer(TestServerLive(), { timeout: Duration.seconds(300), excludeTestServices: true })("the console with the dev key", (it) => {
  it.effect("signs in from the keyboard with a hidden test key, sets up a safe address, a panic key and guardians on chain", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const anchor = yield* Anchor
      const key = generatePrivateKey()
      // The owner signed in once through the API too: its account funded, the reads compared below.
      const { call } = yield* Effect.promise(() => signedInPair(baseUrl, key))
      const safe = privateKeyToAccount(generatePrivateKey()).address
      const panicKey = privateKeyToAccount(generatePrivateKey()).address
      const guardian = privateKeyToAccount(generatePrivateKey()).address
      const b = yield* browser
      const { page, offsite } = yield* offlinePage(b)
      const seen = watchPage(page)
      const sent: Array<string> = []
      page.on("request", (req) => sent.push(`${req.url()} ${req.postData() ?? ""}`))

      yield* Effect.promise(async () => {
        await page.setViewport({ width: 390, height: 844 })
        await page.goto(`${baseUrl}/console`, { waitUntil: "networkidle0" })
        await page.waitForSelector("#devkey-form", { timeout: 10_000 })
        await look(page, "#overview", "#devkey-form", "console-dev-key-sign-in")
      })
      const reason = yield* Effect.promise(() => textOf(page, "#wallet-reason"))
      assert.include(reason, "No wallet found", "the greyed-out wallet button says why")
      const described = yield* Effect.promise(() => page.$eval("#wallet", (b) => b.getAttribute("aria-describedby")))
      assert.strictEqual(described, "wallet-reason")
      assert.strictEqual(yield* Effect.promise(() => page.$eval("#devkey", (i) => (i as HTMLInputElement).type)), "password")

      // From the keyboard only: Tab to the key field, type, Enter.
      yield* Effect.promise(async () => {
        for (let i = 0; i < 20; i++) {
          if (await page.evaluate(() => document.activeElement?.id === "devkey")) break
          await page.keyboard.press("Tab")
        }
        assert.isTrue(await page.evaluate(() => document.activeElement?.id === "devkey"), "the key field is reached with Tab")
        await page.keyboard.type(key)
        await page.keyboard.press("Enter")
        await page.waitForSelector("#accounts article.chain", { timeout: 30_000 })
      })
      assert.include(yield* Effect.promise(() => textOf(page, "#who")), "(dev key)")
      assert.isFalse(sent.some((line) => line.toLowerCase().includes(key.slice(2).toLowerCase())), "the key is never sent")
      yield* Effect.promise(() => look(page, "#overview", "#agents", "console-dev-key-overview"))

      // The entry of the faucet's account is not anchored yet: said so, and no proof asked.
      yield* Effect.promise(async () => {
        await look(page, "#safety", `#safety article.safety[data-chain-id="${net.chainId}"]`, "console-safety")
      })
      const card = `#safety article.safety[data-chain-id="${net.chainId}"]`
      yield* Effect.promise(async () => {
        await page.type(`${card} input.safe-input`, safe)
        await page.click(`${card} button.set-safe`)
        await until(page, `${card} .safe code[title="${safe}" i]`)
        await page.type(`${card} input.panic-input`, panicKey)
        await page.type(`${card} input.panic-label`, "Bob (brother)")
        await page.click(`${card} button.add-panic`)
        await until(page, `${card} li.panic-key[data-installed=true]`)
        await page.type(`${card} textarea.guardians-input`, `Carol, ${guardian}`)
        await page.click(`${card} button.add-guardians`)
        await until(page, `${card} li.guardian`)
      })
      const rules = (yield* Effect.promise(() => call("owner", "get", `/account/rules?chainId=${net.chainId}`))).body
      assert.strictEqual(rules.safeAddress.toLowerCase(), safe.toLowerCase(), "the Recovery contract holds the safe address")
      assert.strictEqual(rules.panicKeys[0].panicKey.toLowerCase(), panicKey.toLowerCase())
      assert.isTrue(rules.panicKeys[0].enabledOnChain, "the panic delegation is live on chain")
      assert.deepStrictEqual(rules.recovery.guardians.map((g: any) => g.address.toLowerCase()), [guardian.toLowerCase()])
      assert.strictEqual(rules.recovery.threshold, 1)
      const safety = yield* Effect.promise(() => textOf(page, card))
      assert.include(safety, "“Bob (brother)”")
      assert.include(safety, "Carol")
      yield* Effect.promise(() => look(page, "#safety", `${card} li.guardian`, "console-safety-set"))

      // Activity: entries not yet anchored say so; once anchored, the proof is one click away.
      yield* Effect.promise(async () => {
        await look(page, "#activity", "li.entry .proof.unanchored", "console-activity-unanchored")
      })
      yield* anchor.anchorNow
      yield* Effect.promise(async () => {
        await page.click("#refresh")
        await page.waitForSelector("li.entry button.proof-check", { timeout: 30_000 })
        await page.click("li.entry button.proof-check")
        await page.waitForSelector("li.entry .proof.proven", { timeout: 30_000 })
      })
      const proven = yield* Effect.promise(() => textOf(page, "li.entry .proof.proven"))
      assert.include(proven, "proof checks against the anchored root", "a dev key has no RPC: the page says what it checked")
      assert.deepStrictEqual(seen.failed, [], "no request of the page failed (no proof asked before its anchor)")
      assert.deepStrictEqual(seen.errors, [])
      assert.deepStrictEqual(offsite, [])
    }), { timeout: 300_000 })
})
