/**
 * The service's own x402 facilitator (docs/payments.md, "The facilitator in `npm start`"): the
 * ERC-7710 mechanism of `@das/x402-erc7710` on a stock `x402Facilitator`, one registration per
 * served chain, behind the spec's HTTP interface (GET /supported, POST /verify, POST /settle) on
 * a port of its own (`X402_FACILITATOR_HOST`:`X402_FACILITATOR_PORT`, default 127.0.0.1:4020;
 * `0`: a free port; `off`: none), as the metrics listener is. A merchant's resource server
 * (`@x402/express`) points its `HTTPFacilitatorClient` at it; an owner names its settlement
 * address as a grant's redeemer.
 *
 * The settlement key pays the gas of every settlement: `CHAIN_<id>_X402_FACILITATOR_PRIVATE_KEY`,
 * else `X402_FACILITATOR_PRIVATE_KEY` (secrets, like the anchor key). A local network the process
 * started, with neither set, gets a key generated at start (one for every local chain, like the
 * local paymaster's signer: the chain lives as long as the process) and 10 test ETH
 * (`anvil_setBalance`). A configured chain without a key is not settled on (logged).
 */
import { facilitatorApp, registerErc7710Facilitator } from "@das/x402-erc7710"
import { x402Facilitator } from "@x402/core/facilitator"
import { Config, Context, Duration, Effect, Layer, Option, Redacted, Schedule } from "effect"
import { createServer } from "node:http"
import { type Address, type Hex, isHex, parseEther, toHex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { Chains } from "../chain/Chains.ts"
import { LocalReadyTimeout } from "../platform/ChildProcess.ts"
import { httpOrigin, listenScoped } from "../platform/FreePort.ts"

/** A payment's header carries the whole delegation chain (11 kB with one recipient, 41 kB with 32): Node's 16 KiB default is too small. */
const MAX_HEADER_BYTES = 64 * 1024

/** The facilitator's port when X402_FACILITATOR_PORT is unset. */
const DEFAULT_PORT = "4020"

export const FacilitatorConfig = Config.all({
  host: Config.String("X402_FACILITATOR_HOST").pipe(Config.withDefault("127.0.0.1")),
  port: Config.option(Config.String("X402_FACILITATOR_PORT")),
  key: Config.option(Config.Redacted("X402_FACILITATOR_PRIVATE_KEY"))
})

export class FacilitatorServer extends Context.Service<FacilitatorServer, {
  /** `http://host:port` (its `/supported`, `/verify`, `/settle`), or none when off. */
  readonly url: Option.Option<string>
  /** The settlement address on each chain settled on. */
  readonly addresses: ReadonlyMap<number, Address>
}>()("das/payments/FacilitatorServer") {
  static readonly layer = Layer.effect(
    FacilitatorServer,
    Effect.gen(function*() {
      const config = yield* FacilitatorConfig
      const off = FacilitatorServer.of({ url: Option.none(), addresses: new Map() })
      const portText = Option.getOrElse(config.port, () => DEFAULT_PORT)
      if (portText.trim().toLowerCase() === "off") return off
      const port = Number(portText)
      if (!Number.isInteger(port) || port < 0 || port > 65535) {
        return yield* Effect.die(new Error(`X402_FACILITATOR_PORT must be a port number, 0 or off; got "${portText}"`))
      }
      const chains = yield* Chains
      const facilitator = new x402Facilitator()
      const addresses = new Map<number, Address>()
      // One generated key for every local chain (when it is needed at all).
      let localKey: Hex | undefined
      for (const net of chains.all) {
        const own = yield* Config.option(Config.Redacted(`CHAIN_${net.chainId}_X402_FACILITATOR_PRIVATE_KEY`))
        const configured = Option.orElse(own, () => config.key)
        let key: Hex
        if (Option.isSome(configured)) {
          const value = Redacted.value(configured.value)
          if (!isHex(value) || value.length !== 66) {
            return yield* Effect.die(new Error(`the x402 facilitator key of chain ${net.chainId} must be a 32-byte hex private key`))
          }
          key = value
        } else if (net.network.devKey !== undefined) {
          localKey ??= generatePrivateKey()
          key = localKey
          const address = privateKeyToAccount(key).address
          // A local anvil: give the settlement key gas without a transaction of the dev account.
          // Part of the start: a busy machine's anvil may take longer than one call's bound
          // (CHAIN_<id>_RPC_TIMEOUT, 10 s; at load 46 it did), so it is asked again (setting a
          // balance twice is the same) within the start's own bound, LOCAL_READY_TIMEOUT.
          const bound = yield* Effect.orDie(LocalReadyTimeout)
          yield* Effect.tryPromise(() =>
            net.chain.client.request({ method: "anvil_setBalance" as never, params: [address, toHex(parseEther("10"))] as never })
          ).pipe(
            Effect.tapError((e) => Effect.logInfo(`x402 facilitator: chain ${net.chainId} did not fund the settlement key yet (${(e.cause instanceof Error ? e.cause.message : e.message).split("\n")[0]}); asking again`)),
            Effect.retry(Schedule.spaced(Duration.seconds(1))),
            Effect.timeoutOrElse({
              duration: bound,
              orElse: () => Effect.die(new Error(`x402 facilitator: chain ${net.chainId} did not fund the settlement key within LOCAL_READY_TIMEOUT`))
            })
          )
        } else {
          yield* Effect.logWarning(`x402 facilitator: no key for chain ${net.chainId} (CHAIN_${net.chainId}_X402_FACILITATOR_PRIVATE_KEY); not settling there`)
          continue
        }
        const on = registerErc7710Facilitator(facilitator, {
          network: { chainId: net.chainId, rpcUrl: net.network.rpcUrl, delegation: net.network.delegation },
          key,
          // Local chains mine at once; a remote chain's blocks come every few seconds.
          pollingIntervalMs: net.network.devKey === undefined ? 1_000 : 100
        })
        addresses.set(net.chainId, on.address)
      }
      if (addresses.size === 0) return off
      const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, facilitatorApp(facilitator))
      // The default port taken (a second instance on this host): a free one, said in the log; a port
      // the operator chose and that is taken ends the start in one line naming its variable.
      const bound = yield* listenScoped(server, {
        name: "x402 facilitator",
        variable: "X402_FACILITATOR_PORT",
        host: config.host,
        port,
        fallBack: Option.isNone(config.port)
      })
      const url = httpOrigin(config.host, bound)
      for (const [chainId, address] of addresses) {
        yield* Effect.logInfo(`x402 facilitator: ${url} settles ERC-7710 payments on chain ${chainId} from ${address}`)
      }
      return FacilitatorServer.of({ url: Option.some(url), addresses })
    })
  )
}
