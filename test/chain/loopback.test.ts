/**
 * Safe defaults: what the service starts listens on loopback unless configured. The run's own
 * local network (anvil; Alto, which has no host option and binds every interface by itself:
 * src/chain/loopback-only.cjs) and embedded PostgreSQL are checked in the kernel's table of
 * listening sockets, and the preload is checked on its own, both ways.
 */
import { assert, describe, it } from "@effect/vitest"
import { Effect } from "effect"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { inject } from "vitest"

/** Local addresses of the TCP sockets listening on `port` (from /proc/net/tcp and tcp6). */
const listeners = (port: number): Array<string> => {
  const out: Array<string> = []
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    if (!fs.existsSync(file)) continue
    for (const line of fs.readFileSync(file, "utf8").split("\n").slice(1)) {
      const cols = line.trim().split(/\s+/)
      if (cols.length < 4 || cols[3] !== "0A") continue // 0A: LISTEN
      const [hexIp, hexPort] = cols[1]!.split(":")
      if (parseInt(hexPort!, 16) !== port) continue
      out.push(hexIp!.length === 8 ? hexIp!.match(/../g)!.reverse().map((b) => parseInt(b, 16)).join(".") : `ipv6:${hexIp}`)
    }
  }
  return out
}

const IPV6_LOOPBACK = "ipv6:00000000000000000000000001000000"
const isLoopback = (address: string) => address.startsWith("127.") || address === IPV6_LOOPBACK

const portOf = (url: string) => Number(new URL(url).port)

/**
 * A node process that listens as Alto does (`{ port: 0, host: "0.0.0.0" }`) under the preload,
 * given `args` as Alto would be; prints where it bound and the arguments left for it.
 */
const boundUnderPreload = (args: ReadonlyArray<string>) =>
  Effect.promise(() =>
    new Promise<string>((resolve, reject) => {
      const preload = path.resolve(import.meta.dirname, "../../src/chain/loopback-only.cjs")
      const script =
        `const s = require("node:net").createServer(); s.listen({ port: 0, host: "0.0.0.0" }, () => { console.log(s.address().address, JSON.stringify(process.argv.slice(1))); s.close() })`
      execFile(process.execPath, ["--require", preload, "-e", script, "--", ...args], (error, stdout) =>
        error ? reject(error) : resolve(stdout.trim()))
    })
  )

describe("listening on loopback by default", () => {
  it("anvil, Alto and the embedded PostgreSQL of the run listen on loopback only", () => {
    const network = inject("network")
    for (const [name, port] of [["anvil", portOf(network.rpcUrl)], ["alto", portOf(network.bundlerUrl)], ["postgres", inject("pg").port]] as const) {
      const addresses = listeners(port)
      assert.isAbove(addresses.length, 0, `${name} is not listening on ${port}`)
      assert.isTrue(addresses.every(isLoopback), `${name} listens on ${addresses.join(", ")}`)
    }
  })

  it.effect("the preload binds Alto's every-interface listen to loopback, or to LOCAL_NETWORK_HOST's value", () =>
    Effect.gen(function*() {
      assert.strictEqual(yield* boundUnderPreload(["--port", "1"]), `127.0.0.1 ["--port","1"]`)
      // The host as an argument, taken out before Alto parses its own.
      assert.strictEqual(
        yield* boundUnderPreload(["--port", "1", "--das-listen-host", "0.0.0.0", "--safe-mode", "false"]),
        `0.0.0.0 ["--port","1","--safe-mode","false"]`
      )
    }))
})
