/**
 * The pages beside the API: `/` (the console and the reference), `/docs` (the Scalar reference of `/openapi.json`)
 * with everything it loads served from here (Scalar's script, the Inter and JetBrains Mono fonts
 * from npm), so the reference works with no network at all.
 */
import { Effect, Layer } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { type HttpApi, type HttpApiGroup, OpenApi } from "effect/http-api"
import { NotFound } from "../api/Errors.ts"
import { pagePolicy } from "../api/PageSecurity.ts"
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const require = createRequire(import.meta.url)

/** Fonts the page's CSS names, by the file name served under `/docs/assets/`. */
const fonts: Record<string, string> = {
  "inter.woff2": require.resolve("@fontsource-variable/inter/files/inter-latin-wght-normal.woff2"),
  "jetbrains-mono-400.woff2": require.resolve("@fontsource/jetbrains-mono/files/jetbrains-mono-latin-400-normal.woff2"),
  "jetbrains-mono-500.woff2": require.resolve("@fontsource/jetbrains-mono/files/jetbrains-mono-latin-500-normal.woff2"),
  "jetbrains-mono-600.woff2": require.resolve("@fontsource/jetbrains-mono/files/jetbrains-mono-latin-600-normal.woff2"),
  "jetbrains-mono-700.woff2": require.resolve("@fontsource/jetbrains-mono/files/jetbrains-mono-latin-700-normal.woff2")
}

const fontCss = [
  `@font-face{font-family:"Inter";font-style:normal;font-display:swap;font-weight:100 900;src:url(/docs/assets/inter.woff2) format("woff2")}`,
  ...[400, 500, 600, 700].map((w) =>
    `@font-face{font-family:"JetBrains Mono";font-style:normal;font-display:swap;font-weight:${w};src:url(/docs/assets/jetbrains-mono-${w}.woff2) format("woff2")}`
  )
].join("\n")

/**
 * The probe by which the bundle's Zod asks whether `eval` is allowed (`new Function("")` in a
 * try): the page's policy forbids it, so the probe is answered "no" up front, as it would be, and
 * the browser reports no refused eval. Zod then takes its path without generated code.
 */
const EVAL_PROBE = `try{return new Function(""),!0}catch(e){return!1}`

/** Scalar's browser bundle as Effect ships it (the one `HttpApiScalar.layer` inlines in every page), read once. */
const scalarScript = Effect.promise(async () => {
  const effectDist = path.dirname(fileURLToPath(import.meta.resolve("effect")))
  const module = await import(pathToFileURL(path.join(effectDist, "http-api", "internal", "httpApiScalar.js")).href)
  return (module.javascript as string).replace(EVAL_PROBE, "return!1")
})

const escapeJson = (value: unknown) => JSON.stringify(value).replace(/</g, "\\u003c")
const escapeHtml = (text: string) => text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;")

const html = (body: string) => HttpServerResponse.text(body, { contentType: "text/html; charset=utf-8" })
const cacheable = { "cache-control": "public, max-age=86400" }

const docsPage = <Id extends string, Groups extends HttpApiGroup.Constraint>(api: HttpApi.HttpApi<Id, Groups>) => {
  const spec = OpenApi.fromApi(api)
  const config = {
    _integration: "html",
    withDefaultFonts: false,
    customCss: fontCss,
    authentication: { preferredSecurityScheme: "bearer" },
    content: spec
  }
  return `<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>${escapeHtml(spec.info.title)}</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
  </head>
  <body>
    <div id="api-reference-container"></div>
    <script src="/docs/assets/scalar.js"></script>
    <script>
      window.Scalar.createApiReference(document.getElementById("api-reference-container"), ${escapeJson(config)})
    </script>
  </body>
</html>`
}

export const homePage = `<!doctype html>
<html>
  <head>
    <meta charset="utf-8" />
    <title>Delegated-Authority Account Service</title>
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <style>body{font:16px/1.5 system-ui,sans-serif;max-width:40rem;margin:3rem auto;padding:0 1rem}a{display:block;margin:.5rem 0}</style>
  </head>
  <body>
    <h1>Delegated-Authority Account Service</h1>
    <p>Scoped, revocable authority over ERC-4337 smart accounts.</p>
    <a href="/console">Console: your delegations, activity and notifications</a>
    <a href="/docs">API reference</a>
    <a href="/openapi.json">OpenAPI document (JSON)</a>
  </body>
</html>`

/** The pages of the contract `api` (composed at the top and passed in: this folder sits below it). */
export const pagesRoutes = <Id extends string, Groups extends HttpApiGroup.Constraint>(api: HttpApi.HttpApi<Id, Groups>) => Layer.mergeAll(
  HttpRouter.use(Effect.fnUntraced(function*(router) {
    // Each page's response is made once: the edge derives its Content-Security-Policy once per body.
    const docsHtml = docsPage(api)
    // Scalar writes its styles as it runs (src/api/PageSecurity.ts): the reference's own policy.
    const docs = HttpServerResponse.setHeader(html(docsHtml), "content-security-policy", pagePolicy(docsHtml, { runtimeStyles: true }))
    const home = html(homePage)
    const script = yield* scalarScript
    yield* router.add("GET", "/", Effect.succeed(home))
    yield* router.add("GET", "/docs", Effect.succeed(docs))
    yield* router.add(
      "GET",
      "/docs/assets/scalar.js",
      Effect.succeed(HttpServerResponse.text(script, { contentType: "text/javascript; charset=utf-8", headers: cacheable }))
    )
    yield* router.add(
      "GET",
      "/docs/assets/:file",
      Effect.flatMap(HttpRouter.params, (params) => {
        const file = fonts[params.file ?? ""]
        return file === undefined
          ? Effect.fail(new NotFound({ message: "No such file of the API reference" }))
          : Effect.sync(() => HttpServerResponse.uint8Array(fs.readFileSync(file), { contentType: "font/woff2", headers: cacheable }))
      })
    )
  }))
)
