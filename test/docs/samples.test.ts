/**
 * Code samples in docs/ and the README that are whole programs (a ```ts block right after a
 * `<!-- compiled -->` line) compile: each is written beside the sources and type-checked with the
 * project's own compiler options, so a renamed API breaks this test, not a reader's first try.
 */
import { assert, describe, it } from "@effect/vitest"
import { execFile } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import { promisify } from "node:util"

const root = path.resolve(import.meta.dirname, "../..")
const documents = ["README.md", ...fs.readdirSync(path.join(root, "docs")).filter((f) => f.endsWith(".md")).map((f) => `docs/${f}`)]

const samples = documents.flatMap((doc) => {
  const text = fs.readFileSync(path.join(root, doc), "utf8")
  return [...text.matchAll(/<!-- compiled -->\n```ts\n([\s\S]*?)```/g)].map((m, i) => ({ doc, index: i, code: m[1]! }))
})

describe("docs samples", () => {
  it("there are samples to compile (docs/relay.md's viem example)", () => {
    assert.isAtLeast(samples.filter((s) => s.doc === "docs/relay.md").length, 1)
  })

  it("every marked sample type-checks", { timeout: 240_000 }, async () => {
    const dir = fs.mkdtempSync(path.join(root, ".docs-samples-"))
    try {
      const files = samples.map((s) => {
        // Written at the root's depth so `./src/...` imports resolve as in the document.
        const file = path.join(root, `${path.basename(dir)}-${s.doc.replace(/[/.]/g, "_")}-${s.index}.ts`)
        fs.writeFileSync(file, `${s.code}\nexport {}\n`)
        return file
      })
      const config = path.join(dir, "tsconfig.json")
      const base = JSON.parse(fs.readFileSync(path.join(root, "tsconfig.json"), "utf8"))
      fs.writeFileSync(config, JSON.stringify({ compilerOptions: { ...base.compilerOptions, module: "NodeNext", target: "ES2022" }, files }))
      try {
        await promisify(execFile)(path.join(root, "node_modules/.bin/tsc"), ["-p", config], { cwd: root })
      } catch (e) {
        const out = (e as { stdout?: string }).stdout ?? String(e)
        assert.fail(`a docs sample does not compile:\n${out}`)
      } finally {
        files.forEach((f) => fs.rmSync(f, { force: true }))
      }
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })
})
