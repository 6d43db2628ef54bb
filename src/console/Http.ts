/**
 * The console: `/console` (a page), `/console/app.css` and `/console/app.js`, bundled from `client.ts`
 * (Preact + htm views in ./web) with esbuild (from npm, already needed by tsx) when the layer starts:
 * no build step, no internet.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { build } from "esbuild"
import { readFileSync } from "node:fs"
import { fileURLToPath } from "node:url"
import { Chains } from "../chain/Chains.ts"

/** No inline script, style or handler: the page's CSP allows only 'self' (the stylesheet and the script below). */
const page = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Console · Delegated-Authority Account Service</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <link rel="stylesheet" href="/console/app.css" />
    <script defer src="/console/app.js"></script>
  </head>
  <body>
    <div id="app"><noscript>The console needs JavaScript.</noscript></div>
  </body>
</html>`

const bundle = Effect.promise(async () => {
  const result = await build({
    entryPoints: [fileURLToPath(new URL("./client.ts", import.meta.url))],
    bundle: true,
    write: false,
    format: "iife",
    platform: "browser",
    target: "es2022",
    minify: true,
    logLevel: "silent",
    // The audit hashes use node:crypto's sha256: in the browser, the same over @noble/hashes.
    alias: { "node:crypto": fileURLToPath(new URL("./cryptoShim.ts", import.meta.url)) }
  })
  return result.outputFiles[0]!.text
})

export const ConsoleRoutes = Layer.mergeAll(
  HttpRouter.use(Effect.fnUntraced(function*(router) {
    const script = yield* bundle
    const css = readFileSync(new URL("./app.css", import.meta.url), "utf8")
    const chains = yield* Chains
    // The dev-key sign-in is offered only where every key is a test key: a local network the process started.
    const config = JSON.stringify({ devKeySignIn: chains.all.every((c) => c.network.devKey !== undefined) })
    yield* router.add("GET", "/console/config", Effect.succeed(HttpServerResponse.text(config, { contentType: "application/json" })))
    yield* router.add("GET", "/console", Effect.succeed(HttpServerResponse.text(page, { contentType: "text/html; charset=utf-8" })))
    yield* router.add("GET", "/console/app.css", Effect.succeed(HttpServerResponse.text(css, { contentType: "text/css; charset=utf-8" })))
    yield* router.add(
      "GET",
      "/console/app.js",
      Effect.succeed(HttpServerResponse.text(script, { contentType: "text/javascript; charset=utf-8" }))
    )
  }))
)
