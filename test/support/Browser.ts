/**
 * A real Chromium (from the `@sparticuz/chromium` npm package, so nothing else is needed on a fresh
 * machine) driven by puppeteer-core, in a scope. Every request that leaves loopback is refused and
 * recorded (`offsite`): the pages must work with no network at all.
 */
import chromium from "@sparticuz/chromium"
import { Effect } from "effect"
import * as fs from "node:fs"
import puppeteer, { type Page } from "puppeteer-core"

export const screenshotDir = new URL("../../.test-results/screenshots/", import.meta.url)

export const browser = Effect.acquireRelease(
  Effect.promise(async () =>
    puppeteer.launch({ executablePath: await chromium.executablePath(), args: chromium.args, headless: true })
  ),
  (b) => Effect.promise(() => b.close())
)

/** A page that refuses (and records) every request off loopback. */
export const offlinePage = (b: Effect.Success<typeof browser>) =>
  Effect.promise(async () => {
    const page = await b.newPage()
    const offsite: Array<string> = []
    await page.setRequestInterception(true)
    page.on("request", (req) => {
      const url = new URL(req.url())
      if (url.protocol === "data:" || url.protocol === "blob:" || url.hostname === "127.0.0.1" || url.hostname === "localhost") {
        void req.continue()
      } else {
        offsite.push(req.url())
        void req.abort()
      }
    })
    return { page, offsite }
  })

export const screenshot = (page: Page, name: string) =>
  Effect.promise(async () => {
    fs.mkdirSync(screenshotDir, { recursive: true })
    await page.screenshot({ path: new URL(`${name}.png`, screenshotDir).pathname as `${string}.png`, fullPage: false })
  })
