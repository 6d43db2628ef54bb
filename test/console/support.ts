/**
 * What the console's browser tests share: an owner and an agent signed in through the API, the agent's
 * own calls (its actions, its requests for more), a test EIP-1193 wallet backed by a local key (viem
 * signs in node, exposed to the page by puppeteer), and `look`: a view's screenshot, axe-core's serious
 * and critical violations, and the page's width against the viewport.
 */
import { assert } from "@effect/vitest"
import { createRequire } from "node:module"
import * as fs from "node:fs"
import type { LocalAccount } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import type { Page } from "puppeteer-core"
import { signInMessage } from "../../src/client/signIn.ts"
import { send, type Ctx } from "../reference/scenario.ts"
import { screenshotDir } from "../support/Browser.ts"

export type Call = (as: "owner" | "agent", method: string, path: string, body?: unknown) => Promise<{ status: number; body: any }>

/** An owner and an agent signed in (fresh keys, or the owner's given), the owner's account funded with 100 test USDC. */
export const signedInPair = async (baseUrl: string, ownerKey = generatePrivateKey()) => {
  const owner = privateKeyToAccount(ownerKey)
  const agent = privateKeyToAccount(generatePrivateKey())
  const ctx: Ctx = { baseUrl, owner, agent, tokens: {}, b: {}, anchorNow: async () => {}, answers: {} }
  const call: Call = (as, method, path, body) => send(ctx, method, path, as, body === undefined ? {} : { body }) as Promise<{ status: number; body: any }>
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

/** Signs a build with `as`'s key, relays it and waits until it settles. */
export const relayAs = async (ctx: Ctx, call: Call, as: "owner" | "agent", build: any) => {
  const signer = as === "owner" ? ctx.owner : ctx.agent
  let receipt = (await call(as, "post", "/userops", { ...build.userOp, signature: await signer.signTypedData(build.typedData) })).body
  for (let i = 0; i < 150 && receipt.status === "submitted"; i++) {
    await new Promise((r) => setTimeout(r, 200))
    receipt = (await call(as, "get", `/userops/${receipt.userOpId}`)).body
  }
  return receipt
}

/** Finds and clicks in one step in the page: a live update re-renders the lists, which may replace a handle found earlier. */
export const clickNow = (page: Page, selector: string) => page.$eval(selector, (b) => (b as HTMLElement).click())

/** The text of the first element matching `selector` ("" when none). */
export const textOf = (page: Page, selector: string) =>
  page.evaluate((s: string) => document.querySelector(s)?.textContent ?? "", selector)

/** The test wallet (EIP-1193): signs with `owner`'s key (viem, in node), forwards everything else to the chain's RPC. */
export const injectWallet = async (page: Page, owner: LocalAccount, rpcUrl: string, calls: Array<string>) => {
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

/** What a page did that a person should never meet: error responses of its own requests (a 409 for a proof too early), console errors. */
export const watchPage = (page: Page) => {
  const failed: Array<string> = []
  const errors: Array<string> = []
  page.on("response", (res) => {
    if (res.status() >= 400) failed.push(`${res.status()} ${res.request().method()} ${new URL(res.url()).pathname}`)
  })
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(m.text())
  })
  page.on("pageerror", (e) => errors.push(String(e)))
  return { failed, errors }
}

const axeSource = fs.readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

/**
 * Opens a view (`#hash`), waits for `ready`, keeps a screenshot, and asserts that axe-core finds no
 * serious or critical violation and that nothing runs past the viewport's width.
 */
export const look = async (page: Page, view: string, ready: string, name: string) => {
  await page.evaluate((v: string) => {
    location.hash = v
  }, view)
  await page.waitForSelector(ready, { timeout: 30_000 })
  fs.mkdirSync(screenshotDir, { recursive: true })
  await page.screenshot({ path: new URL(`${name}.png`, screenshotDir).pathname as `${string}.png`, fullPage: true })
  // Evaluated through the DevTools protocol: the page's own CSP does not apply to it.
  await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    const result = await (window as any).axe.run(document, { resultTypes: ["violations"] })
    return (result.violations as Array<any>)
      .filter((v) => v.impact === "serious" || v.impact === "critical")
      .map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n: any) => n.target.join(" ")).join("; ")}`)
  })
  assert.deepStrictEqual(violations, [], `axe on ${name}`)
  const width = await page.evaluate(() => ({ page: document.documentElement.scrollWidth, viewport: window.innerWidth }))
  assert.isAtMost(width.page, width.viewport, `${name}: nothing wider than the viewport`)
}

/** Waits for `selector`; on a timeout the error carries the page's status line (what the person was told). */
export const until = async (page: Page, selector: string, timeout = 90_000) => {
  try {
    await page.waitForSelector(selector, { timeout })
  } catch (e) {
    throw new Error(`${selector} never appeared; the page said: ${await textOf(page, "#status")}`, { cause: e })
  }
}
