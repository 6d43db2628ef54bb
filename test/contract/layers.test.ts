/**
 * The layering (docs/contributing.md, "Folders and layers"): a folder imports only its own layer
 * or lower ones, and no two folders import each other. Where a lower layer must call up, it
 * declares a port (a service tag) that the higher one provides at the top.
 */
import { assert, describe, it } from "@effect/vitest"
import * as fs from "node:fs"
import * as path from "node:path"

const src = path.resolve(import.meta.dirname, "../../src")

/** Each folder's layer; folders not listed are features (5); the top-level files are 6. */
const LAYERS: Record<string, number> = {
  domain: 0, api: 0, platform: 0, db: 0,
  chain: 1, tokens: 1,
  auth: 2, accounts: 2,
  builds: 3, audit: 3, anchor: 3,
  userops: 4, follower: 4
}
const FEATURE = 5
const TOP = 6

const files = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory() ? files(path.join(dir, e.name)) : e.name.endsWith(".ts") ? [path.join(dir, e.name)] : []
  )

/** The folder a file belongs to (its first segment under src/), or "." for the top-level files. */
const folderOf = (file: string) => {
  const parts = path.relative(src, file).split(path.sep)
  return parts.length > 1 ? parts[0]! : "."
}
const layerOf = (folder: string) => (folder === "." ? TOP : LAYERS[folder] ?? FEATURE)

/** Every import between two folders: `from → to` with the files. */
const edges = () => {
  const found = new Map<string, Array<string>>()
  for (const file of files(src)) {
    const text = fs.readFileSync(file, "utf8")
    for (const m of text.matchAll(/^(?:import|export)[^"\n]*from "(\.[^"]+)"/gm)) {
      const target = path.resolve(path.dirname(file), m[1]!)
      if (!target.startsWith(src)) continue
      const from = folderOf(file)
      const to = folderOf(target)
      if (from === to) continue
      const key = `${from} → ${to}`
      found.set(key, [...(found.get(key) ?? []), `${path.relative(src, file)} imports ${path.relative(src, target)}`])
    }
  }
  return found
}

describe("layering", () => {
  it("no folder imports a higher layer, and no two folders import each other", () => {
    const all = edges()
    const wrong: Array<string> = []
    for (const [key, lines] of all) {
      const [from, to] = key.split(" → ") as [string, string]
      // The client is built from the composed contract (it imports nothing of the server side).
      if (from === "client") continue
      if (layerOf(to) > layerOf(from)) wrong.push(...lines.map((l) => `up: ${l}`))
      else if (all.has(`${to} → ${from}`)) wrong.push(...lines.map((l) => `both ways: ${l}`))
    }
    assert.deepStrictEqual(wrong, [])
  })
})

describe("packages", () => {
  const packages = path.resolve(import.meta.dirname, "../../packages")
  it("a workspace package imports nothing of the service (src/, test/): only itself and npm packages", () => {
    const wrong: Array<string> = []
    for (const pkg of fs.readdirSync(packages)) {
      const root = path.join(packages, pkg)
      for (const file of files(root).filter((f) => !f.includes(`${path.sep}node_modules${path.sep}`))) {
        const text = fs.readFileSync(file, "utf8")
        for (const m of text.matchAll(/(?:^|\n)\s*(?:import|export)[^"\n]*from "([^"]+)"|import\("([^"]+)"\)/g)) {
          const spec = m[1] ?? m[2]!
          if (!spec.startsWith(".")) continue
          const target = path.resolve(path.dirname(file), spec)
          if (!target.startsWith(root + path.sep)) wrong.push(`${path.relative(packages, file)} imports ${spec}`)
        }
      }
    }
    assert.deepStrictEqual(wrong, [])
  })
})
