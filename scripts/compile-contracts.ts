/**
 * Compiles the project's own Solidity (every `src/chain/contracts/*.sol`, and the vendored sources in its
 * sub-folders, e.g. `erc8004/`: each folder's README names their origin) with the pinned
 * solc-js from npm and writes one TypeScript module per source file beside it
 * (`Foo.sol` → `Foo.ts`, exporting `<contract>Abi` and `<contract>Bytecode` for every
 * deployable contract in it). The output is a pure function of the sources and the
 * settings below, so the checked-in modules can be proven equal to a fresh compile
 * (`test/chain/artifacts.test.ts`; `npm run contracts:check`).
 *
 *   npm run contracts:compile          # rewrite the generated modules
 *   npm run contracts:check            # exit 1 if any module differs from a fresh compile
 */
import * as fs from "node:fs"
import { createRequire } from "node:module"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

const require = createRequire(import.meta.url)
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..")
export const contractsDir = path.join(root, "src", "chain", "contracts")

/** The only settings used; changing any of them changes every artifact. */
export const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: "cancun",
  outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } }
} as const

/**
 * The vendored ERC-8004 registries (erc8004/README.md) with the settings their repository publishes
 * (via-IR, evm shanghai, 200 runs; without via-IR the ReputationRegistry is "stack too deep"), on our pinned solc.
 */
export const VENDORED_SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: "shanghai",
  viaIR: true,
  outputSelection: SETTINGS.outputSelection
} as const

const settingsOf = (file: string) => (file.startsWith("erc8004/") ? VENDORED_SETTINGS : SETTINGS)

interface Solc {
  readonly version: () => string
  readonly compile: (input: string, options: { import: (p: string) => { contents: string } | { error: string } }) => string
}

const solc = (): Solc => require("solc") as Solc

/** Imports resolve inside the repository first, then from node_modules (e.g. `@account-abstraction/contracts`). */
const findImport = (importPath: string): { contents: string } | { error: string } => {
  for (const candidate of [path.join(contractsDir, importPath), path.join(root, "node_modules", importPath)]) {
    if (fs.existsSync(candidate)) return { contents: fs.readFileSync(candidate, "utf8") }
  }
  return { error: `not found: ${importPath}` }
}

const lowerFirst = (s: string) => s.charAt(0).toLowerCase() + s.slice(1)

/** Every source, as its path under `contractsDir`: the folder's own files, then one level of sub-folders. */
export const sourceFiles = (): Array<string> => {
  const entries = fs.readdirSync(contractsDir, { withFileTypes: true })
  const own = entries.filter((e) => e.isFile() && e.name.endsWith(".sol")).map((e) => e.name)
  const nested = entries.filter((e) => e.isDirectory()).flatMap((d) =>
    fs.readdirSync(path.join(contractsDir, d.name)).filter((f) => f.endsWith(".sol")).map((f) => `${d.name}/${f}`)
  )
  return [...own, ...nested].sort()
}

/** Compiles one source file and renders its generated module. */
export const compileFile = (file: string): string => {
  const compiler = solc()
  const input = {
    language: "Solidity",
    sources: { [file]: { content: fs.readFileSync(path.join(contractsDir, file), "utf8") } },
    settings: settingsOf(file)
  }
  const output = JSON.parse(compiler.compile(JSON.stringify(input), { import: findImport })) as {
    errors?: Array<{ severity: string; formattedMessage: string }>
    contracts?: Record<string, Record<string, { abi: unknown; evm: { bytecode: { object: string } } }>>
  }
  const errors = (output.errors ?? []).filter((e) => e.severity === "error")
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join("\n"))
  const contracts = output.contracts?.[file] ?? {}
  const parts = [
    "/**",
    ` * Generated from ${file} by scripts/compile-contracts.ts with solc-js ${compiler.version()}`,
    ` * (optimizer on, ${settingsOf(file).optimizer.runs} runs, evm ${settingsOf(file).evmVersion}${"viaIR" in settingsOf(file) ? ", via-IR" : ""}). Do not edit by hand:`,
    " * change the source and run `npm run contracts:compile`.",
    " */"
  ]
  for (const name of Object.keys(contracts).sort()) {
    const { abi, evm } = contracts[name]!
    // Interfaces and abstract contracts have no bytecode: nothing to deploy, nothing to emit.
    if (evm.bytecode.object.length === 0) continue
    parts.push(`export const ${lowerFirst(name)}Abi = ${JSON.stringify(abi, null, 2)} as const`, "")
    parts.push(`export const ${lowerFirst(name)}Bytecode = "0x${evm.bytecode.object}" as const`, "")
  }
  return parts.join("\n").replace(/\*\/\nexport/, "*/\nexport")
}

export const generatedPath = (file: string) => path.join(contractsDir, file.replace(/\.sol$/, ".ts"))

const main = () => {
  const check = process.argv.includes("--check")
  let stale = 0
  for (const file of sourceFiles()) {
    const fresh = compileFile(file)
    const target = generatedPath(file)
    const current = fs.existsSync(target) ? fs.readFileSync(target, "utf8") : ""
    if (current === fresh) {
      console.log(`${file}: up to date`)
    } else if (check) {
      stale++
      console.log(`${file}: differs from a fresh compile`)
    } else {
      fs.writeFileSync(target, fresh)
      console.log(`${file}: written ${path.relative(root, target)}`)
    }
  }
  if (stale > 0) process.exit(1)
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) main()
