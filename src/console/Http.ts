/**
 * The console: `/console` (a page) and `/console/app.js`, bundled from `client.ts` with esbuild
 * (from npm, already needed by tsx) when the layer starts: no build step, no internet.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { build } from "esbuild"
import { fileURLToPath } from "node:url"
import { Chains } from "../chain/Chains.ts"

const page = `<!doctype html>
<html lang="en">
  <head>
    <meta charset="utf-8" />
    <title>Console · Delegated-Authority Account Service</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <style>
      body{font:15px/1.5 system-ui,sans-serif;margin:0;color:#1d2330;background:#f6f7f9}
      header{display:flex;gap:1rem;align-items:center;padding:.75rem 1.5rem;background:#1d2330;color:#fff}
      header a{color:#9cc3ff} main{max-width:68rem;margin:1rem auto;padding:0 1rem}
      section{background:#fff;border:1px solid #e2e5ea;border-radius:8px;padding:1rem 1.25rem;margin-bottom:1rem}
      h2{font-size:1.05rem;margin:.2rem 0 .8rem} h3{margin:.2rem 0;font-size:1rem}
      .badge{font-size:.75rem;padding:.1rem .45rem;border-radius:99px;background:#e2e5ea}
      .badge.active{background:#d8f5e1;color:#11643a}.badge.revoked{background:#fbe0e0;color:#8a1c1c}
      .summary{color:#4a5263;font-size:.9rem}.bar{height:10px;background:#e8ebf0;border-radius:5px;overflow:hidden}
      .fill{height:100%;background:#3b82f6}.figures{font-size:.85rem;margin:.25rem 0 .6rem}
      .entry{list-style:none;padding:.35rem 0;border-bottom:1px solid #eef0f3;font-size:.9rem}
      .proof{font-size:.75rem;padding:.05rem .4rem;border-radius:4px;background:#eef0f3}
      .proof.proven{background:#d8f5e1;color:#11643a}.proof.unproven{background:#fff4d6;color:#7a5600}
      .notification{list-style:none;padding:.3rem 0;font-size:.9rem}.notification.danger{color:#8a1c1c}
      button{font:inherit;padding:.35rem .8rem;border-radius:6px;border:1px solid #b9c0cc;background:#fff;cursor:pointer}
      button:disabled{opacity:.5;cursor:default} ul{padding:0;margin:0} #status{font-size:.85rem;color:#4a5263}
      .grid{display:grid;grid-template-columns:2fr 1fr;gap:1rem}
      .approval{border-top:1px solid #eef0f3;padding:.5rem 0}.approval .actions{display:flex;gap:.4rem;margin-top:.35rem}
      .badge.pending{background:#fff4d6;color:#7a5600}.badge.approved,.badge.executed{background:#d8f5e1;color:#11643a}
      .badge.denied,.badge.expired{background:#fbe0e0;color:#8a1c1c} input.reason{flex:1;min-width:0}
    </style>
  </head>
  <body>
    <header><strong>Console</strong><span id="who"></span><span id="status"></span>
      <span style="margin-left:auto"><a href="/docs">API reference</a></span></header>
    <main>
      <section id="signin">
        <h2>Sign in</h2>
        <p><button id="wallet">Sign in with your wallet</button></p>
        <form id="devkey-form" hidden><label>Local network only: a dev key <input id="devkey" size="70" placeholder="0x…" /></label>
          <button>Sign in with the key</button></form>
        <p class="summary">The key stays in this page: it signs here, the service never sees it.</p>
      </section>
      <div id="app" hidden>
        <section><h2>Account</h2><span id="account"></span> <button id="freeze">Freeze account</button>
          <button id="refresh">Refresh</button></section>
        <div class="grid">
          <div>
            <section><h2>Delegations</h2><div id="delegations"></div></section>
            <section><h2>Activity</h2><ul id="activity"></ul></section>
          </div>
          <div>
            <section><h2>Live notifications</h2><ul id="notifications"></ul></section>
            <section><h2>Approvals</h2><div id="approvals"></div></section>
          </div>
        </div>
      </div>
    </main>
    <script src="/console/app.js"></script>
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
    const chains = yield* Chains
    // The dev-key sign-in is offered only where every key is a test key: a local network the process started.
    const config = JSON.stringify({ devKeySignIn: chains.all.every((c) => c.network.devKey !== undefined) })
    yield* router.add("GET", "/console/config", Effect.succeed(HttpServerResponse.text(config, { contentType: "application/json" })))
    yield* router.add("GET", "/console", Effect.succeed(HttpServerResponse.text(page, { contentType: "text/html; charset=utf-8" })))
    yield* router.add(
      "GET",
      "/console/app.js",
      Effect.succeed(HttpServerResponse.text(script, { contentType: "text/javascript; charset=utf-8" }))
    )
  }))
)
