/**
 * `engines` tells the truth: the repository's own Node (the `node` dev dependency, which runs
 * the service and the tests) is in the range, and the lowest version the range admits is one
 * every runtime dependency supports.
 */
import { assert, describe, it } from "@effect/vitest"
import { SemVer, SemVerRange } from "effect"
import * as fs from "node:fs"
import * as path from "node:path"

const root = path.resolve(import.meta.dirname, "../..")
const readJson = (file: string) => JSON.parse(fs.readFileSync(file, "utf8")) as {
  engines?: { node?: string }
  dependencies?: Record<string, string>
}

describe("engines", () => {
  it("admits the repository's Node, and no runtime dependency needs more than its lowest version", () => {
    const pkg = readJson(path.join(root, "package.json"))
    const range = SemVerRange.parseUnsafe(pkg.engines!.node!)
    assert.isTrue(SemVerRange.matches(range, SemVer.parseUnsafe(process.versions.node)), `Node ${process.versions.node}`)
    const lowest = /^>=\s*(\d+\.\d+\.\d+)$/.exec(pkg.engines!.node!)?.[1]
    assert.isDefined(lowest, "engines.node is a lower bound")
    for (const name of Object.keys(pkg.dependencies ?? {})) {
      const needs = readJson(path.join(root, "node_modules", name, "package.json")).engines?.node
      if (needs === undefined) continue
      assert.isTrue(
        SemVerRange.matches(SemVerRange.parseUnsafe(needs), SemVer.parseUnsafe(lowest!)),
        `${name} needs Node ${needs}; engines admits ${lowest}`
      )
    }
  })
})
