/**
 * Processes as /proc shows them, for tests that check what outlives what (kill -9 of the
 * service or of a test run).
 */
import { Effect } from "effect"
import * as fs from "node:fs"

/** Every live process below `pid` (children of children included), from /proc. */
export const descendantsOf = (pid: number): Array<number> => {
  const parentOf = new Map<number, number>()
  for (const name of fs.readdirSync("/proc")) {
    if (!/^\d+$/.test(name)) continue
    try {
      const stat = fs.readFileSync(`/proc/${name}/stat`, "utf8")
      parentOf.set(Number(name), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]))
    } catch {
      // gone meanwhile
    }
  }
  const found: Array<number> = []
  const walk = (p: number) => {
    for (const [child, parent] of parentOf) if (parent === p) (found.push(child), walk(child))
  }
  walk(pid)
  return found
}

/** Running (a zombie has exited: it only waits to be reaped). */
export const alive = (pid: number) => {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8")
    return stat.slice(stat.lastIndexOf(")") + 2)[0] !== "Z"
  } catch {
    return false
  }
}

/** The executable's name (`postgres`, `anvil`, `node`, `sh`). */
export const commOf = (pid: number) => {
  try {
    return fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim()
  } catch {
    return "gone"
  }
}

/** The command name, with its arguments' first words (`postgres`, `anvil`, `node …alto.js`). */
export const describeProcess = (pid: number) => {
  try {
    const args = fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").filter(Boolean)
    return `${pid} ${args.map((a) => a.split("/").at(-1)).join(" ").slice(0, 120)}`
  } catch {
    return `${pid} gone`
  }
}

/** Waits up to `seconds` for every one of `pids` to be gone; the ones still running. */
export const waitGone = (pids: ReadonlyArray<number>, seconds = 30) =>
  Effect.promise(async () => {
    const deadline = Date.now() + seconds * 1000
    while (Date.now() < deadline && pids.some(alive)) await new Promise((r) => setTimeout(r, 100))
    return pids.filter(alive)
  })
