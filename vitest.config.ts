import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    globalSetup: ["test/support/globalSetup.ts"],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    // Two cores: two files at a time; each file has its own database, so they never see each other.
    maxWorkers: 2,
    // One worker per core for the whole run, not one per file: a file's modules (effect, viem, the
    // service) are imported once per worker instead of once per file, which was a quarter of the
    // run. Files still never share state that matters: each has its own database and its own
    // servers, and starts and stops them in its own scope.
    isolate: false,
    sequence: { concurrent: false },
    // The JSON report lets .ci/run print a plain "N passed, N failed" line.
    reporters: ["default", ["json", { outputFile: ".test-results/vitest.json" }]]
  }
})
