/**
 * The local faucet: test stablecoins for an address on a local network (one the service started,
 * whose chain has a dev key). On a configured network it answers 404: there is nothing to give.
 * And where those local networks are (`GET /dev/networks`): their RPC and bundler addresses and
 * contracts, for scripts that run beside the service (a facilitator, a proof check on chain).
 */
import { Schema } from "effect"
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import { BadRequestError, NotFoundError, ServiceUnavailableError } from "../api/Errors.ts"
import { Authorization } from "../auth/Middleware.ts"
import { Address, ChainId, DecimalString, Hash32 } from "../domain/Primitives.ts"

export const FaucetRequest = Schema.Struct({
  /** Who receives: an account address (the owner's smart account, usually). */
  address: Address,
  /** Default: the primary chain. */
  chainId: Schema.optionalKey(ChainId),
  /** `USDC` (default) or `USDT`, the local network's stablecoins. */
  token: Schema.optionalKey(Schema.Literals(["USDC", "USDT"])),
  /** Whole or decimal units, at most 10,000 a call (default 100). */
  amount: Schema.optionalKey(Schema.Finite.check(Schema.isGreaterThan(0), Schema.isLessThanOrEqualTo(10_000)))
}).annotate({ identifier: "FaucetRequest" })

export const FaucetResult = Schema.Struct({
  chainId: Schema.Int,
  token: Schema.String,
  tokenAddress: Address,
  address: Address,
  amount: Schema.Finite,
  txHash: Hash32,
  /** The receiver's balance after the mint, in base units. */
  balanceUnits: DecimalString
}).annotate({ identifier: "FaucetResult" })

const TokenDescription = Schema.Struct({ address: Address, symbol: Schema.String, name: Schema.String, decimals: Schema.Int })

/** A local network as scripts beside the service need it (no keys: the dev key never leaves the service). */
export const LocalNetworkInfo = Schema.Struct({
  chainId: Schema.Int,
  name: Schema.String,
  rpcUrl: Schema.String,
  bundlerUrl: Schema.String,
  entryPoint: Address,
  /** The MetaMask Delegation Framework's addresses: `DelegationManager`, `EntryPoint`, `SimpleFactory`, implementations, caveat enforcers. */
  delegation: Schema.Struct({
    DelegationManager: Address,
    EntryPoint: Address,
    SimpleFactory: Address,
    implementations: Schema.Record(Schema.String, Address),
    caveatEnforcers: Schema.Record(Schema.String, Address)
  }),
  tokens: Schema.Struct({ usd: TokenDescription, usdt: TokenDescription }),
  /** The ERC-8004 Identity and Reputation registries (proxies) where agents are named and rated (docs/onchain.md). */
  erc8004: Schema.optionalKey(Schema.Struct({ identityRegistry: Address, reputationRegistry: Address }))
}).annotate({ identifier: "LocalNetworkInfo" })

export class DevApi extends HttpApiGroup.make("dev")
  .add(
    HttpApiEndpoint.post("faucet", "/dev/faucet", {
      payload: FaucetRequest,
      success: FaucetResult,
      error: [BadRequestError, NotFoundError, ServiceUnavailableError]
    }),
    HttpApiEndpoint.get("networks", "/dev/networks", {
      success: Schema.Array(LocalNetworkInfo),
      error: [NotFoundError]
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Local development", description: "Only on local networks." }))
{}
