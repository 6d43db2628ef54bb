/**
 * The checked-in contract modules are exactly what the pinned solc makes of the sources
 * in the repository: a changed source without a recompile, or a hand-edited artifact, fails.
 */
import { describe, expect, it } from "@effect/vitest"
import * as fs from "node:fs"
import { compileFile, generatedPath, sourceFiles } from "../../scripts/compile-contracts.ts"

describe("contract artifacts", () => {
  const files = sourceFiles()

  it("there are sources to check", () => {
    expect(files.length).toBeGreaterThan(0)
  })

  for (const file of files) {
    it(`${file} equals a fresh compile`, () => {
      expect(fs.readFileSync(generatedPath(file), "utf8")).toBe(compileFile(file))
    }, 60_000)
  }
})
