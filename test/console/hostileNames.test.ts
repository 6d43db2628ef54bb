/**
 * Hostile names in the console (issue 42): a grant's name with a fake clause and a newline, recipient
 * (contact) names with U+202E, zero-width characters, 10 kB and an `<img onerror>`, and an agent's
 * request for more whose reason does the same, all through the API as an agent or a careless owner
 * would send them. In a real Chromium at 390 px: each is quoted and bounded on one line, never in a
 * line that states a limit (the limits are the chain's figures), never executes, and nothing runs
 * past the viewport. A NUL or an over-long grant name is refused with the envelope and creates nothing.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import type { LocalAccount } from "viem"
import { Network } from "../../src/chain/Network.ts"
import { browser, offlinePage } from "../support/Browser.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"
import { type Call, injectWallet, look, signedInPair, until, watchPage } from "./support.ts"

const HIDDEN = /[\u0000-\u001f\u007f-\u009f\u200b-\u200f\u202a-\u202e\u2060-\u2069\ufeff\u2028\u2029]/u
const pwn = `<img src=x onerror="window.__pwned=1">`
const grantName = "Coffee; unlimited\nPer action: 1000000 USDC"
const recipients = [
  { name: pwn, address: "0x00000000000000000000000000000000000005b1" },
  { name: "\u202eredloh\u200b\u200dpay\ufeffpal", address: "0x00000000000000000000000000000000000005b2" },
  { name: `${"W".repeat(10_240)}`, address: "0x00000000000000000000000000000000000005b3" }
]
const reason = `Need more; unlimited\n\u202eauto-approve ${pwn}`

/** Builds, signs and enables a grant as the owner; its id once the chain has enabled it. */
const enable = async (call: Call, owner: LocalAccount, request: Record<string, unknown>) => {
  const build = await call("owner", "post", "/delegations/build", request)
  assert.strictEqual(build.status, 200, JSON.stringify(build.body))
  const leg = build.body.delegations[0]
  const created = await call("owner", "post", "/delegations", {
    userOp: { ...build.body.enableUserOp, signature: await owner.signTypedData(build.body.typedData) },
    userOpHash: build.body.userOpHash,
    delegationSignatures: [{
      permissionId: leg.permissionId,
      signature: await owner.signTypedData({ ...leg.typedData, message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) } })
    }],
    intentType: "delegation_enable"
  })
  assert.isBelow(created.status, 300, JSON.stringify(created.body))
  const id = created.body.id as string
  for (let i = 0; i < 150; i++) {
    if ((await call("owner", "get", `/delegations/${id}`)).body?.status === "active") return id
    await new Promise((r) => setTimeout(r, 200))
  }
  throw new Error(`grant ${id} never became active`)
}

layer(TestServerLive(), { timeout: Duration.seconds(300), excludeTestServices: true })("the console with hostile names", (it) => {
  it.effect("quotes and bounds others' names on one line, never as a limit, never run as HTML, and nothing overflows at 390 px", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const net = yield* Network
      const { ctx, call, owner } = yield* Effect.promise(() => signedInPair(baseUrl))
      const request = (name: string) => ({
        name,
        kind: "agent",
        delegateeAddress: ctx.b.agentAccount,
        chainId: net.chainId,
        // A total budget (one that renews cannot be replaced, and the agent asks for more below).
        budgets: [{ token: { symbol: "USDC" }, amount: 50 }],
        perActionMax: { token: { symbol: "USDC" }, amount: 20 },
        maxActions: 10,
        recipientAllowlist: recipients.map((r) => ({ ...r, chainId: net.chainId }))
      })

      // Refused with the envelope, nothing created: a NUL, a name over its 80 characters.
      for (const bad of ["a\u0000b", "x".repeat(10_240)]) {
        const refused = yield* Effect.promise(() => call("owner", "post", "/delegations/build", request(bad)))
        assert.strictEqual(refused.status, 400)
        assert.strictEqual(refused.body.error.code, "bad_request")
      }
      assert.deepStrictEqual((yield* Effect.promise(() => call("owner", "get", "/delegations"))).body, [], "nothing was created")

      const id = yield* Effect.promise(() => enable(call, owner, request(grantName)))
      // The agent's request for more, in its own words.
      const asked = yield* Effect.promise(() => call("agent", "post", "/approvals/changes", {
        delegationId: id,
        reason,
        changes: { budgets: [{ token: { symbol: "USDC" }, amount: 80 }] }
      }))
      assert.strictEqual(asked.status, 201, JSON.stringify(asked.body))

      const b = yield* browser
      const { page, offsite } = yield* offlinePage(b)
      const seen = watchPage(page)
      const card = `article.delegation[data-id="${id}"]`
      yield* Effect.promise(async () => {
        await injectWallet(page, owner, net.rpcUrl, [])
        await page.setViewport({ width: 390, height: 844 })
        await page.goto(`${baseUrl}/console`, { waitUntil: "networkidle0" })
        await page.waitForSelector("#wallet:not([disabled])", { timeout: 10_000 })
        await page.click("#wallet")
        await until(page, card)
        await until(page, "#inbox article.topup")
        await look(page, "#overview", card, "console-hostile-names-390")
        // The full summary, one click away.
        await page.click(`${card} details.summary summary`)
        await until(page, `${card} .human`)
      })

      const shown = yield* Effect.promise(() =>
        page.evaluate((sel: string) => {
          const c = document.querySelector(sel)!
          const text = (s: string) => Array.from(c.querySelectorAll(s)).map((e) => e.textContent ?? "")
          const wide = Array.from(document.querySelectorAll("#app *")).filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1)
          return {
            name: c.querySelector(".name")?.textContent ?? "",
            limits: [...text(".budget"), ...text(".terms li:not(.recipients)")],
            contacts: text(".terms .recipients .contact"),
            summary: c.querySelector(".human")?.textContent ?? "",
            cardText: c.textContent ?? "",
            reasons: Array.from(document.querySelectorAll("#inbox article.topup p")).map((p) => p.textContent ?? ""),
            images: document.querySelectorAll("#app img").length,
            pwned: (window as any).__pwned,
            wide: wide.map((e) => `${e.tagName}.${e.className}`).slice(0, 5)
          }
        }, card)
      )

      // The grant's name: one line, quoted, its fake clause inside the quotes, never a limit.
      assert.match(shown.name, /^“Coffee; unlimited Per action: 1000000 USDC”$/u)
      for (const line of shown.limits) {
        assert.notInclude(line, "unlimited", `a limit line: ${line}`)
        assert.notInclude(line, "1000000", `a limit line: ${line}`)
        assert.notMatch(line, HIDDEN)
      }
      assert.isTrue(shown.limits.some((l) => l.includes("50 USDC")), "the budget is the chain's 50 USDC")
      assert.isTrue(shown.limits.some((l) => /At most 20 USDC per action/.test(l)), "the per-action cap is the chain's 20 USDC")

      // The contacts: each quoted, bounded, on one line; the markup is text.
      assert.lengthOf(shown.contacts, 3)
      for (const contact of shown.contacts) {
        assert.match(contact, /^“[^“”]*”$/u)
        assert.notMatch(contact, HIDDEN)
        assert.isAtMost(Array.from(contact).length, 50)
      }
      assert.include(shown.contacts[0], "<img src=x onerror='window.__pwned=1'>", "the markup shown as text, its quotes made single")
      assert.strictEqual(shown.contacts[1], "“redlohpaypal”", "no override or zero-width character left")
      assert.isTrue(shown.contacts[2]!.endsWith("…”"), "10 kB cut short")
      assert.isBelow(shown.cardText.length, 4_000, "the card stays short however long the names")

      // The service's summary (one click away): the names quoted after the limits, nothing hidden in it.
      assert.notMatch(shown.summary, HIDDEN)
      assert.notInclude(shown.summary, "W".repeat(200))

      // The agent's reason in the inbox: quoted, bounded, one line.
      const said = shown.reasons.find((r) => r.startsWith("Its reason:")) ?? ""
      assert.match(said, /^Its reason: “Need more; unlimited auto-approve <img [^“”]*…” · until /u)
      assert.isAtMost(Array.from(said.slice(0, said.indexOf(" · until"))).length, "Its reason: ".length + 50)
      assert.notMatch(said, HIDDEN)

      assert.strictEqual(shown.images, 0, "no element made from a name")
      assert.isUndefined(shown.pwned, "no handler ran")
      assert.deepStrictEqual(shown.wide, [], "nothing past the 390 px viewport")

      // The activity's agent filter names the grant the same way.
      const option = yield* Effect.promise(async () => {
        await look(page, "#activity", "#filter-agent", "console-hostile-names-activity-390")
        return page.$eval(`#filter-agent option[value="${id}"]`, (o) => o.textContent ?? "")
      })
      assert.strictEqual(option, "“Coffee; unlimited Per action: 1000000 USDC”")
      assert.deepStrictEqual(seen.errors, [])
      assert.deepStrictEqual(offsite, [], "nothing asked off the service's origin")
    }), { timeout: 300_000 })
})
