/**
 * `/` and `/docs` in a real browser with no network: the reference renders the operations' words,
 * its fonts come from the service, its curl sample says Bearer, and nothing is asked of any other host.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import { browser, offlinePage, screenshot } from "../support/Browser.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"

layer(TestServerLive(), { timeout: Duration.seconds(120), excludeTestServices: true })("the pages beside the API", (it) => {
  it.effect("GET / leads to the reference; /docs works offline with its own fonts and a Bearer curl sample", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const home = yield* Effect.promise(() => fetch(`${baseUrl}/`).then(async (r) => ({ status: r.status, type: r.headers.get("content-type"), text: await r.text() })))
      assert.strictEqual(home.status, 200)
      assert.include(home.type ?? "", "text/html")
      assert.include(home.text, `href="/docs"`)
      const missing = yield* Effect.promise(() => fetch(`${baseUrl}/docs/assets/nothing.woff2`))
      assert.strictEqual(missing.status, 404)

      const b = yield* browser
      const { page, offsite } = yield* offlinePage(b)
      yield* Effect.promise(async () => {
        await page.goto(`${baseUrl}/docs#tag/delegations/POST/delegations/build`, { waitUntil: "networkidle0" })
        await page.waitForFunction(() => document.body.innerText.includes("Build a grant"), { timeout: 30_000 })
      })
      const seen = yield* Effect.promise(() =>
        page.evaluate(async () => {
          await document.fonts.ready
          const loaded: Array<string> = []
          document.fonts.forEach((f) => {
            if (f.status === "loaded") loaded.push(f.family.replace(/"/g, ""))
          })
          return { text: document.body.innerText, loaded }
        })
      )
      yield* screenshot(page, "docs")
      assert.deepStrictEqual(offsite, [], "no request leaves the machine")
      assert.include(seen.text, "Grant a delegation")
      assert.include(seen.text, "Who may call")
      assert.include(seen.loaded, "Inter")
      assert.include(seen.loaded, "JetBrains Mono")
      assert.match(seen.text, /Authorization: Bearer/)
      assert.notMatch(seen.text, /Basic/)
    }), { timeout: 120_000 })
})
