import { Effect, Redacted, Semaphore } from "effect"
import { HttpApiBuilder } from "effect/http-api"
import { encodeFunctionData, erc20Abi, type Hex, parseUnits } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { contractOf } from "../api/Contract.ts"
import { BadRequest, NotFound, ServiceUnavailable } from "../api/Errors.ts"
import { CurrentSigner } from "../auth/Middleware.ts"
import { sendFromDevAccount } from "../chain/DevAccount.ts"
import { Chains } from "../chain/Chains.ts"
import { DevApi } from "./Api.ts"

/** `mint(address,uint256)` of the local network's stablecoins (their deployer may mint). */
const mintAbi = [{
  type: "function",
  name: "mint",
  stateMutability: "nonpayable",
  inputs: [{ name: "to", type: "address" }, { name: "amount", type: "uint256" }],
  outputs: []
}] as const

export const DevHandlers = HttpApiBuilder.group(
  contractOf(DevApi),
  "dev",
  Effect.fn(function*(handlers) {
    const chains = yield* Chains
    // One mint at a time per chain from this process: the dev account's transactions are sent in order.
    const minting = new Map(chains.all.map((c) => [c.chainId, Semaphore.makeUnsafe(1)]))
    return handlers.handle("networks", () =>
      Effect.gen(function*() {
        yield* CurrentSigner
        const local = chains.all.filter((c) => c.network.devKey !== undefined)
        if (local.length === 0) return yield* new NotFound({ message: "No local network is served here: there is nothing to describe" })
        return local.map(({ network: n }) => ({
          chainId: n.chainId,
          name: n.name,
          rpcUrl: n.rpcUrl,
          bundlerUrl: n.bundlerUrl,
          entryPoint: n.entryPoint,
          delegation: n.delegation,
          tokens: {
            usd: { address: n.tokens.usd.address, symbol: n.tokens.usd.symbol, name: n.tokens.usd.name, decimals: n.tokens.usd.decimals },
            usdt: { address: n.tokens.usdt.address, symbol: n.tokens.usdt.symbol, name: n.tokens.usdt.name, decimals: n.tokens.usdt.decimals }
          },
          ...(n.erc8004 === undefined
            ? {}
            : { erc8004: { identityRegistry: n.erc8004.identityRegistry, reputationRegistry: n.erc8004.reputationRegistry } })
        }))
      })).handle("faucet", ({ payload }) =>
      Effect.gen(function*() {
        yield* CurrentSigner
        const net = payload.chainId === undefined ? chains.primary : yield* chains.get(payload.chainId)
        const devKey = net.network.devKey
        if (devKey === undefined) {
          return yield* new NotFound({
            message: `There is no faucet on chain ${net.chainId} (${net.name}): it is not a local network`,
            details: { chainId: net.chainId }
          })
        }
        const symbol = payload.token ?? "USDC"
        const token = symbol === "USDT" ? net.network.tokens.usdt : net.network.tokens.usd
        const amount = payload.amount ?? 100
        // Exactly representable in the token's decimals, or refused (never rounded).
        const fixed = amount.toFixed(token.decimals)
        if (Number(fixed) !== amount) {
          return yield* new BadRequest({
            message: `amount has more than ${token.decimals} decimals (${token.symbol})`,
            details: { field: "amount" }
          })
        }
        const units = parseUnits(fixed, token.decimals)
        // Sent as the dev account, the node assigning the nonce, again when another sender took it (DevAccount.ts).
        const minter = privateKeyToAccount(Redacted.value(devKey)).address
        const txHash = yield* minting.get(net.chainId)!.withPermit(Effect.tryPromise({
          try: async () => {
            const data = encodeFunctionData({ abi: mintAbi, functionName: "mint", args: [payload.address.toLowerCase() as Hex, units] })
            const receipt = await sendFromDevAccount(net.network.rpcUrl, { from: minter, to: token.address, data }, { pollingIntervalMs: 100 })
            if (receipt.status !== "success") throw new Error("the mint reverted")
            return receipt.transactionHash
          },
          // The token refusing the mint (e.g. to the zero address) is the request's fault; anything else the chain's.
          catch: (e): BadRequest | ServiceUnavailable =>
            /revert/i.test(String(e))
              ? new BadRequest({ message: `The token refused the mint to this address: ${String(e).split("\n")[0]}`, details: { field: "address" } })
              : new ServiceUnavailable({ message: `The faucet's mint failed: ${String(e)}`, details: { chainId: net.chainId } })
        }))
        const balance = yield* Effect.tryPromise({
          try: () => net.chain.client.readContract({ address: token.address, abi: erc20Abi, functionName: "balanceOf", args: [payload.address.toLowerCase() as Hex] }),
          catch: () => new ServiceUnavailable({ message: "The chain did not answer", details: { chainId: net.chainId } })
        })
        return {
          chainId: net.chainId,
          token: token.symbol,
          tokenAddress: token.address,
          address: payload.address,
          amount,
          txHash,
          balanceUnits: balance.toString()
        }
      }))
  })
)
