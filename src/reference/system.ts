import type { OperationDoc } from "./Reference.ts"

export const systemDocs: Record<string, OperationDoc> = {
  live: {
    summary: "Is the process up",
    description: "Answers `ok` while the process serves HTTP; checks nothing else. For a liveness probe.",
    caller: "Anyone; no session.",
    chain: "Nothing; reads nothing."
  },
  ready: {
    summary: "Can the service take work",
    description:
      "Answers `ready` when the database answers, with each served chain's RPC and bundler state. A degraded chain " +
      "does not make the service unready: that chain's operations answer 503, the others are served. 503 while the database is down.",
    caller: "Anyone; no session.",
    chain: "Reads each chain's RPC and bundler; changes nothing."
  }
}
