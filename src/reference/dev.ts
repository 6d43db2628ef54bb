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
  },
  "dev.networks": {
    summary: "Where the local networks are (local networks only)",
    description:
      "Every served local network (one the service started, its chain has a dev key): its chain id and name, the RPC and bundler " +
      "URLs, the EntryPoint, the MetaMask Delegation Framework's addresses and the two stablecoins. For scripts that run beside " +
      "the service: an x402 facilitator (`npm run walkthrough:delegation` starts one), a proof checked against the anchor " +
      "transaction. Never a key. Where no served chain is local, 404 `not_found`.",
    caller: "Any session.",
    chain: "Reads nothing and changes nothing."
  }
}
