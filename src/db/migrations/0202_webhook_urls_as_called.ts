import { Effect } from "effect"
import { SqlClient } from "effect/sql"

/**
 * Webhook URLs are stored as they are called (issue 31, src/notifications/webhooks/UrlGuard.ts): an endpoint
 * registered before is rewritten to the URL parser's serialization (WHATWG `URL.href`, without
 * a fragment), which is what its deliveries have always connected to (the parser drops tabs and
 * newlines, trims spaces, turns `http:/host` into `http://host/`). Nothing is deleted: new
 * registrations of such URLs are refused, old ones now show what is called.
 */
export default Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const rows = yield* sql<{ id: string; url: string }>`SELECT id, url FROM webhook_endpoints`
  for (const row of rows) {
    let called: string
    try {
      const url = new URL(row.url)
      url.hash = ""
      called = url.href
    } catch {
      continue // never stored: registration parsed every URL
    }
    if (called !== row.url) yield* sql`UPDATE webhook_endpoints SET url = ${called} WHERE id = ${row.id}`
  }
})
