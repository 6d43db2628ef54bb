/**
 * Pages that cannot be framed or sniffed (issue 41 item 5; src/api/PageSecurity.ts), in a real
 * Chromium: a page on another origin (another loopback port) frames the console and the reference
 * and neither renders; the console and /docs still work under their Content-Security-Policy with no
 * violation reported; every answer says `nosniff`, every page carries the policy, `X-Frame-Options`
 * and `Referrer-Policy`.
 */
import { assert, layer } from "@effect/vitest"
import { Duration, Effect } from "effect"
import * as http from "node:http"
import type { AddressInfo } from "node:net"
import type { Page } from "puppeteer-core"
import { browser, offlinePage, screenshot } from "../support/Browser.ts"
import { TestServer, TestServerLive } from "../support/TestServer.ts"

/** A loopback server of another origin serving `html` at `/`. */
const otherOrigin = (html: string) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; server: http.Server }>((resolve) => {
        const server = http.createServer((_, res) => res.writeHead(200, { "content-type": "text/html" }).end(html))
        server.listen(0, "127.0.0.1", () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, server }))
      })
    ),
    ({ server }) => Effect.promise(() => new Promise<void>((resolve) => server.close(() => resolve())))
  )

/** Records what the browser reports about the page's Content-Security-Policy (events and console lines). */
const watchPolicy = (page: Page) =>
  Effect.promise(async () => {
    const violations: Array<string> = []
    page.on("console", (m) => {
      if (/Content Security Policy|Refused to/i.test(m.text())) violations.push(m.text())
    })
    await page.exposeFunction("__cspViolation", (v: string) => violations.push(v))
    await page.evaluateOnNewDocument(() => {
      document.addEventListener("securitypolicyviolation", (e) =>
        (window as unknown as { __cspViolation: (v: string) => void }).__cspViolation(`${e.violatedDirective} ${e.blockedURI}`))
    })
    return violations
  })

const headersOf = (url: string, init?: RequestInit) =>
  Effect.promise(async () => {
    const r = await fetch(url, init)
    const text = await r.text()
    return { status: r.status, headers: r.headers, text }
  })

layer(TestServerLive(), { timeout: Duration.seconds(180), excludeTestServices: true })("pages that cannot be framed or sniffed", (it) => {
  it.effect("every page carries the policy and the frame and referrer headers; every answer says nosniff", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      for (const path of ["/", "/docs", "/console", "/v1/docs"]) {
        const { status, headers } = yield* headersOf(`${baseUrl}${path}`)
        assert.strictEqual(status, 200, path)
        const csp = headers.get("content-security-policy") ?? ""
        const directives = new Map(csp.split(";").map((d) => d.trim().split(/\s+/)).map(([name, ...sources]) => [name!, sources]))
        assert.deepStrictEqual(directives.get("default-src"), ["'self'"], path)
        assert.deepStrictEqual(directives.get("frame-ancestors"), ["'none'"], path)
        assert.deepStrictEqual(directives.get("object-src"), ["'none'"], path)
        // Scripts: from here, or the page's own inline block pinned by its hash; never any inline code.
        for (const source of directives.get("script-src") ?? []) assert.match(source, /^'self'$|^'sha256-[A-Za-z0-9+/]+=*'$/, path)
        // Styles likewise, but the reference, whose bundle writes its styles as it runs.
        const styles = directives.get("style-src") ?? []
        if (path.endsWith("/docs")) assert.deepStrictEqual(styles, ["'self'", "'unsafe-inline'"])
        else for (const source of styles) assert.match(source, /^'self'$|^'unsafe-hashes'$|^'sha256-[A-Za-z0-9+/]+=*'$/, path)
        assert.notMatch(csp, /https?:|\*|unsafe-eval/, `${path}: nothing from elsewhere`)
        assert.strictEqual(headers.get("x-frame-options"), "DENY", path)
        assert.strictEqual(headers.get("x-content-type-options"), "nosniff", path)
        assert.strictEqual(headers.get("referrer-policy"), "no-referrer", path)
      }
      const others: ReadonlyArray<readonly [string, RequestInit | undefined, number]> = [
        ["/openapi.json", undefined, 200],
        ["/console/app.js", undefined, 200],
        ["/console/config", undefined, 200],
        ["/docs/assets/scalar.js", undefined, 200],
        ["/docs/assets/inter.woff2", undefined, 200],
        ["/health/live", undefined, 200],
        ["/accounts", undefined, 401],
        ["/no/such/route", undefined, 404],
        ["/auth/nonce", { method: "PUT" }, 405],
        ["/auth/nonce", { method: "OPTIONS" }, 204]
      ]
      for (const [path, init, expected] of others) {
        const { status, headers } = yield* headersOf(`${baseUrl}${path}`, init)
        assert.strictEqual(status, expected, path)
        assert.strictEqual(headers.get("x-content-type-options"), "nosniff", path)
      }
    }))

  it.effect("a page on another origin frames the console and the reference: neither renders", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const attacker = yield* otherOrigin(`<!doctype html><html><body><h1>Win a prize</h1>
        <iframe id="console" src="${baseUrl}/console" style="opacity:0.01" width="800" height="600"></iframe>
        <iframe id="docs" src="${baseUrl}/docs" width="800" height="600"></iframe></body></html>`)
      const b = yield* browser
      const { page } = yield* offlinePage(b)
      const violations = yield* watchPolicy(page)
      yield* Effect.promise(() => page.goto(attacker.url, { waitUntil: "networkidle0" }))
      yield* screenshot(page, "framed-console")
      const frames = page.frames().filter((f) => f !== page.mainFrame())
      assert.strictEqual(frames.length, 2)
      for (const frame of frames) {
        // A refused frame is Chromium's error page, never the service's document.
        const seen = yield* Effect.promise(() =>
          frame.evaluate(() => ({ freeze: document.getElementById("freeze") !== null, text: document.body?.innerText ?? "", url: location.href }))
            .catch((e: unknown) => ({ freeze: false, text: "", url: `not readable: ${String(e)}` }))
        )
        assert.isFalse(seen.freeze, JSON.stringify(seen))
        assert.notInclude(seen.text, "Sign in with your wallet")
        assert.notInclude(seen.text, "Grant a delegation")
        assert.notStrictEqual(seen.url, `${baseUrl}/console`)
      }
      assert.isTrue(
        violations.some((v) => v.includes("frame-ancestors")),
        `the browser names frame-ancestors: ${JSON.stringify(violations)}`
      )
    }))

  it.effect("the console and the reference work under their policy: no violation reported", () =>
    Effect.gen(function*() {
      const { baseUrl } = yield* TestServer
      const b = yield* browser
      const { page, offsite } = yield* offlinePage(b)
      const violations = yield* watchPolicy(page)
      const errors: Array<string> = []
      page.on("pageerror", (e) => errors.push(String(e)))

      yield* Effect.promise(async () => {
        await page.goto(`${baseUrl}/console`, { waitUntil: "networkidle0" })
        // The script ran (it reads /console/config and shows the local dev-key sign-in) and the styles applied.
        await page.waitForFunction(() => document.getElementById("devkey-form")?.hidden === false, { timeout: 15_000 })
      })
      const styled = yield* Effect.promise(() =>
        page.evaluate(() => getComputedStyle(document.querySelector("header")!).display)
      )
      assert.strictEqual(styled, "flex", "the page's own styles apply")
      assert.deepStrictEqual(violations.splice(0), [], "the console: no Content-Security-Policy violation")

      yield* Effect.promise(async () => {
        await page.goto(`${baseUrl}/docs#tag/delegations/POST/delegations/build`, { waitUntil: "load", timeout: 90_000 })
        await page.waitForFunction(() => document.body.innerText.includes("Grant a delegation"), { timeout: 30_000 })
        await page.goto(`${baseUrl}/`, { waitUntil: "load" })
      })
      yield* screenshot(page, "docs-under-csp")
      assert.deepStrictEqual(violations, [], "the reference and the home page: no Content-Security-Policy violation")
      assert.deepStrictEqual(errors, [])
      assert.deepStrictEqual(offsite, [])
    }))
})
