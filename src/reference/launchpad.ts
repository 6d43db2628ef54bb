import type { OperationDoc } from "./Reference.ts"

export const launchpadDocs: Record<string, OperationDoc> = {
  "launchpad.listTokens": {
    summary: "Browse launchpad tokens",
    description: "Tokens of the upstream launchpad on a chain (or all), sorted (`volume24h` by default), paged, optionally searched.",
    caller: "Anyone; no session.",
    chain: "Nothing; reads the upstream."
  },
  "launchpad.tokenHistory": {
    summary: "A token's price history",
    description: "Price points of one token over a range (`1D`, `1W`, `1M`...; an unknown range is `1M`). 404 when the upstream does not know it.",
    caller: "Anyone; no session.",
    chain: "Nothing; reads the upstream."
  }
}
