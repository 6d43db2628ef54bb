import type { OperationDoc } from "./Reference.ts"

export const devDocs: Record<string, OperationDoc> = {
  "dev.faucet": {
    summary: "Fund an address with test stablecoins (local networks only)",
    description:
      "Mints the local network's `USDC` (default) or `USDT` to `address`: 100 by default, at most 10,000 a call. Served only on " +
      "a local network the service started (its chain has a dev key); on a configured network it is 404 `not_found`. " +
      "Use it to fund the owner's smart account before granting a budget.",
    caller: "Any session.",
    chain: "Mints the token to the address (a transaction by the local network's deployer key)."
  }
}
