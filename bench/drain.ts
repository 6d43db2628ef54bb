/**
 * Graceful drain figures (issue 28 item 1; docs/operations.md, "Shutdown"): the scenario of
 * test/platform/Drain.test.ts (test/support/DrainLoad.ts) measured against its goals. The
 * service as its own process (an embedded PostgreSQL of its own, a local chain) under
 * keep-alive readers, slow requests in flight and an open notifications stream; then SIGTERM.
 *
 * Goals: readiness 503 within 100 ms of the signal (the drain starts in the signal's handler;
 * what the figure adds is the wait for the event loop's turn and the pollers' own requests); every accepted request answered (no reset);
 * no answer after the drain began keeps its connection alive; exit 0 inside `SHUTDOWN_DEADLINE`.
 *
 *   npm run scenario:drain            (about 30 s)
 */
import { Effect, Exit, Scope } from "effect"
import { spawn } from "node:child_process"
import * as path from "node:path"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { configEnvOf, make as startLocalNetwork, toJson } from "../src/chain/LocalNetwork.ts"
import { signIn } from "../src/client/signIn.ts"
import { startFakeUpstream } from "../test/launchpad/FakeUpstream.ts"
import { describeFigures, figures, runDrain } from "../test/support/DrainLoad.ts"
import { freePort, root, startPostgres } from "./support/processes.ts"
import { report } from "./support/results.ts"

process.env.DO_NOT_TRACK = "1"
const deadlineMs = 10_000
/** `DRAIN_DELAY_MS=2000 npm run scenario:drain`: the drain with a delay (the listener open, readiness 503). */
const delayMs = Number(process.env.DRAIN_DELAY_MS ?? "0")

const scope = Effect.runSync(Scope.make())
const network = toJson(await Effect.runPromise(startLocalNetwork().pipe(Scope.provide(scope))))
const pg = await startPostgres()
const upstream = await startFakeUpstream()
const port = await freePort()
const baseUrl = `http://127.0.0.1:${port}`

let output = ""
const child = spawn(process.execPath, ["--import", "tsx", path.join(root, "src/main.ts")], {
  cwd: root,
  env: {
    ...process.env,
    DATABASE_URL: pg.url,
    PORT: String(port),
    HOST: "127.0.0.1",
    LOG_FORMAT: "json",
    METRICS_PORT: "off",
    X402_FACILITATOR_PORT: "off",
    SIWE_DOMAIN: "drain.local",
    SIWE_URI: "http://drain.local",
    ANCHOR_INTERVAL: "0 seconds",
    LAUNCHPAD_API_URL: upstream.url,
    LAUNCHPAD_PRICES_URL: upstream.url,
    SHUTDOWN_DEADLINE: `${deadlineMs} millis`,
    SHUTDOWN_DELAY: `${delayMs} millis`,
    ...configEnvOf([network])
  },
  stdio: ["ignore", "pipe", "pipe"]
})
child.stdout!.on("data", (d) => (output += d))
child.stderr!.on("data", (d) => (output += d))
let ready = false
for (let i = 0; i < 1200 && !ready && child.exitCode === null; i++) {
  ready = await fetch(`${baseUrl}/health/ready`).then((r) => r.ok, () => false)
  if (!ready) await new Promise((r) => setTimeout(r, 100))
}
if (!ready) {
  console.error(`the service did not become ready:\n${output.slice(-3000)}`)
  child.kill("SIGKILL")
  process.exit(2)
}

const session = await Effect.runPromise(signIn(baseUrl, privateKeyToAccount(generatePrivateKey())))
const run = await runDrain({ service: { child, baseUrl, output: () => output }, upstream, token: session.token, slowMs: 1500, readers: 32 })
const f = figures(run)
console.log(describeFigures(f, deadlineMs))
const readiness = f.readiness503Ms ?? Number.POSITIVE_INFINITY
report({ path: "drain: readiness 503 after SIGTERM", service: readiness, baseline: 100, unit: "ms", goal: "≤ 100 ms", met: readiness <= 100 })
// The service's own part of it: the signal's handler ran (the event loop's wait for a turn).
report({
  path: "drain: drain started after SIGTERM",
  service: f.drainStartedMs,
  baseline: 100,
  unit: "ms",
  goal: "≤ 100 ms, and no readiness 200 after it",
  met: f.drainStartedMs <= 100 && f.readiness200AfterDrain === 0
})
report({
  path: "drain: accepted requests unanswered",
  service: f.unanswered.length,
  baseline: 0,
  unit: "ratio",
  goal: "0",
  met: f.unanswered.length === 0
})
report({
  path: "drain: exit after SIGTERM",
  service: f.exitMs / 1000,
  baseline: deadlineMs / 1000,
  unit: "s",
  goal: `exit 0 < ${deadlineMs / 1000} s`,
  met: run.exitCode === 0 && f.exitMs < deadlineMs && f.keptAliveAfterStop === 0
})
await upstream.close()
await pg.stop()
await Effect.runPromise(Scope.close(scope, Exit.void))
