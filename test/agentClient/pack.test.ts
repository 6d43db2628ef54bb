/**
 * The packages an agent builder installs (issue 43, h43 item 4): `npm pack` in each package's
 * folder (its `prepack` builds `dist/` from `src/` with tsc), both tarballs installed into a
 * fresh folder outside the repository, and plain `node` (no tsx, no loader) imports
 * `@das/agent-client` and `@das/x402-erc7710` from there: the classes and functions are what the
 * README says, the declarations are shipped, and the client signs in against nothing but its
 * own code (a call to a closed port fails as the client's own error). The npm registry is asked
 * only for the packages' published dependencies (from npm's cache when it has them).
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { promisify } from "node:util"

const run = promisify(execFile)
const root = path.resolve(import.meta.dirname, "../..")
const node = process.execPath
// npm as the repository's Node runs it (its own npm-cli.js), so the packages' scripts get that Node too.
const npmCli = path.join(path.dirname(node), "..", "lib", "node_modules", "npm", "bin", "npm-cli.js")
const npm = (args: ReadonlyArray<string>, cwd: string) =>
  run(fs.existsSync(npmCli) ? node : "npm", fs.existsSync(npmCli) ? [npmCli, ...args] : [...args], {
    cwd,
    env: { ...process.env, PATH: `${path.dirname(node)}:${path.join(root, "node_modules", ".bin")}:${process.env.PATH ?? ""}`, npm_config_update_notifier: "false" },
    maxBuffer: 64 * 1024 * 1024,
    timeout: 480_000
  })

describe("the installable packages", () => {
  it("npm pack, installed outside the repository: plain node imports @das/agent-client and @das/x402-erc7710", async () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "das-pack-"))
    try {
      const tarballs: Array<string> = []
      for (const pkg of ["x402-erc7710", "agent-client"]) {
        const { stdout } = await npm(["pack", "--json", "--pack-destination", out], path.join(root, "packages", pkg))
        const [packed] = JSON.parse(stdout.slice(stdout.indexOf("["))) as Array<{ filename: string; files: Array<{ path: string }> }>
        const files = packed!.files.map((f) => f.path)
        assert.include(files, "dist/index.js", `${pkg} ships its build`)
        assert.include(files, "dist/index.d.ts", `${pkg} ships its declarations`)
        tarballs.push(path.join(out, packed!.filename))
      }
      const app = path.join(out, "app")
      fs.mkdirSync(app)
      fs.writeFileSync(path.join(app, "package.json"), JSON.stringify({ name: "an-agent", private: true, type: "module" }))
      await npm(["install", "--prefer-offline", "--no-audit", "--no-fund", ...tarballs], app)
      assert.isFalse(fs.existsSync(path.join(app, "node_modules", "tsx")), "no TypeScript loader in the agent's install")
      assert.isTrue(fs.existsSync(path.join(app, "node_modules", "@das", "agent-client", "dist", "index.d.ts")))

      const script = `
        const client = await import("@das/agent-client")
        const x402 = await import("@das/x402-erc7710")
        const { privateKeyToAccount } = await import("viem/accounts")
        const signer = privateKeyToAccount("0x" + "11".repeat(32))
        let failed = ""
        try { await client.AgentClient.signIn({ baseUrl: "http://127.0.0.1:9", signer }) } catch (e) { failed = e instanceof Error ? e.name : String(e) }
        console.log(JSON.stringify({
          agentClient: typeof client.AgentClient,
          apiError: typeof client.ApiError,
          serviceAuthorizer: typeof client.serviceAuthorizer,
          askForPermission: typeof client.AgentClient.prototype.askForPermission,
          registerErc7710Client: typeof x402.registerErc7710Client,
          registerErc7710Server: typeof x402.registerErc7710Server,
          failed
        }))`
      const { stdout } = await run(node, ["--input-type=module", "-e", script], { cwd: app, timeout: 120_000 })
      const seen = JSON.parse(stdout.trim().split("\n").at(-1)!) as Record<string, string>
      assert.deepStrictEqual(seen, {
        agentClient: "function",
        apiError: "function",
        serviceAuthorizer: "function",
        askForPermission: "function",
        registerErc7710Client: "function",
        registerErc7710Server: "function",
        failed: "TypeError"
      })
    } finally {
      fs.rmSync(out, { recursive: true, force: true })
    }
  }, 600_000)
})
