/**
 * A minimal ERC-4337 bundler on loopback for a chain of the test's own (an anvil fork):
 * `eth_sendUserOperation` bundles the operation at once (`handleOps` from a dev account),
 * `eth_getUserOperationReceipt` reads the EntryPoint's event from the chain, gas estimates
 * are fixed and generous. Enough for the relay to send and settle on a chain a test may
 * rewind, which the run's shared Alto (bundling on the shared chain) cannot serve.
 */
import { Effect } from "effect"
import * as http from "node:http"
import { type Address, createPublicClient, createWalletClient, type Hash, type Hex, http as viemHttp, toHex } from "viem"
import { entryPoint07Abi, getUserOperationHash, toPackedUserOperation } from "viem/account-abstraction"
import { privateKeyToAccount } from "viem/accounts"
import { viemChainOf } from "../../src/chain/Chain.ts"
import { findInclusion } from "../../src/chain/Inclusions.ts"

/** anvil's dev account #8 (unused by the local network). */
const BUNDLER_KEY: Hex = "0xdbda1821b80551c9d65939329250298aa3472ba22feea921c0cf5d620ea67b97"

type RpcOp = Record<string, string | undefined>

const big = (v: string | undefined) => (v === undefined || v === null ? undefined : BigInt(v))

export const miniBundler = (rpcUrl: string, entryPoint: Address, chainId: number) =>
  Effect.acquireRelease(
    Effect.promise(() =>
      new Promise<{ url: string; close: () => void }>((resolve) => {
        const chain = viemChainOf({ chainId, rpcUrl })
        const client = createPublicClient({ chain, transport: viemHttp(rpcUrl), pollingInterval: 20 })
        const wallet = createWalletClient({ chain, transport: viemHttp(rpcUrl), account: privateKeyToAccount(BUNDLER_KEY) })
        const methods: Record<string, (params: ReadonlyArray<unknown>) => Promise<unknown>> = {
          eth_chainId: async () => toHex(chainId),
          eth_supportedEntryPoints: async () => [entryPoint],
          eth_estimateUserOperationGas: async () => ({
            preVerificationGas: toHex(100_000),
            verificationGasLimit: toHex(1_000_000),
            callGasLimit: toHex(500_000),
            paymasterVerificationGasLimit: toHex(300_000),
            paymasterPostOpGasLimit: toHex(100_000)
          }),
          eth_sendUserOperation: async (params) => {
            const o = params[0] as RpcOp
            const op = {
              sender: o["sender"] as Address,
              nonce: big(o["nonce"])!,
              ...(o["factory"] ? { factory: o["factory"] as Address, factoryData: o["factoryData"] as Hex } : {}),
              callData: o["callData"] as Hex,
              callGasLimit: big(o["callGasLimit"])!,
              verificationGasLimit: big(o["verificationGasLimit"])!,
              preVerificationGas: big(o["preVerificationGas"])!,
              maxFeePerGas: big(o["maxFeePerGas"])!,
              maxPriorityFeePerGas: big(o["maxPriorityFeePerGas"])!,
              ...(o["paymaster"]
                ? {
                  paymaster: o["paymaster"] as Address,
                  paymasterVerificationGasLimit: big(o["paymasterVerificationGasLimit"])!,
                  paymasterPostOpGasLimit: big(o["paymasterPostOpGasLimit"])!,
                  paymasterData: (o["paymasterData"] ?? "0x") as Hex
                }
                : {}),
              signature: o["signature"] as Hex
            }
            const hash = getUserOperationHash({ userOperation: op as never, entryPointAddress: entryPoint, entryPointVersion: "0.7", chainId })
            const tx = await wallet.writeContract({
              address: entryPoint,
              abi: entryPoint07Abi,
              functionName: "handleOps",
              args: [[toPackedUserOperation(op as never)], wallet.account.address],
              gas: 5_000_000n
            })
            await client.waitForTransactionReceipt({ hash: tx })
            return hash
          },
          eth_getUserOperationReceipt: async (params) => {
            const found = await findInclusion(client as never, entryPoint, params[0] as Hash, 10_000n)
            if (found === undefined) return null
            const r = found.receipt
            return {
              userOpHash: r.userOpHash,
              sender: r.sender,
              nonce: toHex(r.nonce),
              success: r.success,
              ...(r.revertData === undefined ? {} : { reason: r.revertData }),
              actualGasCost: toHex(r.actualGasCost),
              actualGasUsed: toHex(r.actualGasUsed),
              paymaster: r.paymaster ?? "0x0000000000000000000000000000000000000000",
              logs: r.logs,
              receipt: { transactionHash: r.transactionHash, blockNumber: toHex(r.blockNumber), blockHash: r.blockHash }
            }
          }
        }
        const server = http.createServer((req, res) => {
          const chunks: Array<Buffer> = []
          req.on("data", (c: Buffer) => chunks.push(c))
          req.on("end", async () => {
            const rpc = JSON.parse(Buffer.concat(chunks).toString()) as { id: unknown; method: string; params?: ReadonlyArray<unknown> }
            const reply = (payload: object) => {
              res.writeHead(200, { "content-type": "application/json" })
              res.end(JSON.stringify({ jsonrpc: "2.0", id: rpc.id, ...payload }))
            }
            const method = methods[rpc.method]
            if (method === undefined) return reply({ error: { code: -32601, message: `method ${rpc.method} not found` } })
            try {
              reply({ result: await method(rpc.params ?? []) })
            } catch (e) {
              reply({ error: { code: -32500, message: e instanceof Error ? e.message.split("\n")[0] : String(e) } })
            }
          })
        })
        server.listen(0, "127.0.0.1", () => {
          const { port } = server.address() as { port: number }
          resolve({
            url: `http://127.0.0.1:${port}`,
            close: () => {
              server.closeAllConnections()
              server.close()
            }
          })
        })
      })
    ),
    (b) => Effect.sync(() => b.close())
  )
