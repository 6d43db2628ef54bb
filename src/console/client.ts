/**
 * The console in the browser (bundled by the service with esbuild: no build step, nothing from the
 * internet). Views in ./web (Preact + htm), the data and every call to the service in ./web/store.ts.
 */
import { render } from "preact"
import { html } from "./web/html.ts"
import { App } from "./web/App.ts"
import { actions } from "./web/store.ts"
import type { Eip1193 } from "./web/session.ts"

window.addEventListener("DOMContentLoaded", () => {
  void actions.init((window as unknown as { ethereum?: Eip1193 }).ethereum)
  render(html`<${App} />`, document.getElementById("app")!)
})
