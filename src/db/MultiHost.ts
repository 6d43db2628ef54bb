/**
 * Several PostgreSQL hosts in one `DATABASE_URL`, as libpq takes them
 * (`postgres://user:pass@10.0.0.1:5432,10.0.0.2:5432/db?target_session_attrs=read-write`):
 * the service connects to whichever host is the primary now, and follows it when it changes
 * (a failover). docs/operations.md, "A highly available database".
 *
 * @effect/sql-pg 4 speaks the protocol itself and its URL takes one host (a comma in the
 * authority is no URL at all), so this module does what libpq does around it: it finds the
 * host that fits `target_session_attrs` (`read-write`: `transaction_read_only` is off;
 * `primary`: not in recovery; `any`, the default: the first that answers) by connecting to
 * each in order, and hands the client's pool a socket factory (sql-pg's `stream` option) that
 * connects to that host. It looks again when a connection fails or closes (a dead primary, a
 * restarted node) and, while none fits, every half second (a connection asked for meanwhile
 * fails at once, as libpq's would); every 5 s it checks that the host it uses still fits.
 * Meanwhile the service answers 503 (src/api/DatabaseOutage.ts: a connection failure, or a
 * write refused by a node turned read-only under it).
 *
 * TLS with several hosts: the server name checked is the first host's (give every node a
 * certificate valid for it, or use `sslmode=require`).
 */
import { PgClient } from "@effect/sql-pg"
import { Duration, Effect, Latch, Option, Redacted, type Scope } from "effect"
import { Reactivity } from "effect/reactivity"
import { SqlClient } from "effect/sql"
import * as net from "node:net"

export interface Host {
  readonly host: string
  readonly port: number
}

export type TargetSessionAttrs = "any" | "read-write" | "primary"

export interface MultiHostUrl {
  readonly hosts: ReadonlyArray<Host>
  readonly targetSessionAttrs: TargetSessionAttrs
  /** The URL with only the first host (user, password, database and parameters as given). */
  readonly firstHostUrl: string
}

const hostOf = (part: string): Host => {
  const v6 = /^\[([^\]]+)\](?::(\d+))?$/.exec(part)
  if (v6 !== null) return { host: v6[1]!, port: v6[2] === undefined ? 5432 : Number(v6[2]) }
  const i = part.lastIndexOf(":")
  return i < 0 ? { host: decodeURIComponent(part), port: 5432 } : { host: decodeURIComponent(part.slice(0, i)), port: Number(part.slice(i + 1)) }
}

/**
 * The hosts of a libpq-style URL, when it names several or asks for `target_session_attrs`;
 * none for a plain one-host URL (sql-pg takes it as it is).
 */
export const parseMultiHostUrl = (raw: string): Option.Option<MultiHostUrl> => {
  const m = /^(postgres(?:ql)?:\/\/)([^@/?#]*@)?([^/?#]*)(.*)$/.exec(raw)
  if (m === null) return Option.none()
  const [, scheme, userinfo = "", authority, rest = ""] = m
  const query = new URLSearchParams(rest.includes("?") ? rest.slice(rest.indexOf("?") + 1).split("#")[0] : "")
  const attrs = query.get("target_session_attrs")
  if (!authority!.includes(",") && attrs === null) return Option.none()
  if (attrs !== null && attrs !== "any" && attrs !== "read-write" && attrs !== "primary") {
    throw new Error(`DATABASE_URL: target_session_attrs=${attrs} is not supported (any, read-write or primary)`)
  }
  const hosts = authority!.split(",").filter((h) => h !== "").map(hostOf)
  if (hosts.length === 0 || hosts.some((h) => !Number.isInteger(h.port) || h.port < 1 || h.port > 65535)) {
    throw new Error("DATABASE_URL: a host list must be host[:port],host[:port],...")
  }
  const first = authority!.split(",")[0]!
  return Option.some({ hosts, targetSessionAttrs: attrs ?? "any", firstHostUrl: `${scheme}${userinfo}${first}${rest}` })
}

export interface HostLocator {
  /** A socket to the host in use (sql-pg's `stream`): writes wait for the connection. */
  readonly stream: () => net.Socket
  /** The host in use (none while no host fits). */
  readonly current: () => Host | undefined
}

const PROBE_TIMEOUT = Duration.seconds(2)
const SEARCH_EVERY = Duration.millis(500)
const CHECK_EVERY = Duration.seconds(5)

/**
 * Finds the host to use now, and keeps finding it for the life of the scope (probing
 * connections use the URL's credentials and database).
 */
export const makeHostLocator = (
  url: MultiHostUrl,
  credentials: { readonly applicationName: string }
): Effect.Effect<HostLocator, never, Scope.Scope> =>
  Effect.gen(function*() {
    let current: Host | undefined
    const wake = Latch.makeUnsafe(false)
    const name = (h: Host) => `${h.host.includes(":") ? `[${h.host}]` : h.host}:${h.port}`

    /** Whether `h` answers and fits `target_session_attrs`. */
    const fits = (h: Host) =>
      Effect.scoped(
        Effect.gen(function*() {
          const client = yield* PgClient.makeClient({
            url: Redacted.make(url.firstHostUrl),
            host: h.host,
            port: h.port,
            connectTimeout: PROBE_TIMEOUT,
            applicationName: `${credentials.applicationName} probe`.slice(0, 63)
          })
          const sql = client as SqlClient.SqlClient
          const [row] = yield* sql<{ recovery: boolean; read_only: string }>`
            SELECT pg_is_in_recovery() AS recovery, current_setting('transaction_read_only') AS read_only`
          if (row === undefined) return false
          return url.targetSessionAttrs === "any" ||
            (url.targetSessionAttrs === "primary" ? !row.recovery : row.read_only === "off")
        })
      ).pipe(
        Effect.provide(Reactivity.layer),
        Effect.timeoutOption(Duration.sum(PROBE_TIMEOUT, Duration.seconds(1))),
        Effect.map(Option.getOrElse(() => false)),
        Effect.orElseSucceed(() => false)
      )

    const locate = Effect.gen(function*() {
      for (const h of url.hosts) {
        if (yield* fits(h)) return h
      }
      return undefined
    })

    const use = (found: Host | undefined) =>
      Effect.suspend(() => {
        const before = current
        current = found
        if (found !== undefined && (before === undefined || name(before) !== name(found))) {
          return Effect.logInfo(`database: using ${name(found)} (${url.targetSessionAttrs})`)
        }
        if (found === undefined && before !== undefined) {
          return Effect.logWarning(`database: ${name(before)} no longer fits (${url.targetSessionAttrs}); looking for another host`)
        }
        return Effect.void
      })

    yield* use(yield* locate)
    yield* Effect.gen(function*() {
      while (true) {
        yield* Effect.raceFirst(Effect.sleep(current === undefined ? SEARCH_EVERY : CHECK_EVERY), wake.await)
        wake.closeUnsafe()
        // The host in use still fits: keep it (one probe); otherwise look through them all.
        const still = current !== undefined && (yield* fits(current))
        if (!still) yield* use(yield* locate)
      }
    }).pipe(Effect.forkScoped)

    const stream = () => {
      const h = current
      if (h === undefined) {
        // As libpq: no host fits, no connection (never a read-write pool on a standby).
        const refused = new net.Socket()
        process.nextTick(() =>
          refused.destroy(new Error(`no host of DATABASE_URL fits target_session_attrs=${url.targetSessionAttrs}`))
        )
        wake.openUnsafe()
        return refused
      }
      const socket = net.connect({ host: h.host, port: h.port, noDelay: true })
      // A failed or closed connection may be a failover: look again (wakes coalesce).
      socket.once("error", () => wake.openUnsafe())
      socket.once("close", () => wake.openUnsafe())
      return socket
    }
    return { stream, current: () => current }
  })
