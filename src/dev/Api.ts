/**
 * The local faucet: test stablecoins for an address on a local network (one the service started,
 * whose chain has a dev key). On a configured network it answers 404: there is nothing to give.
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

export class DevApi extends HttpApiGroup.make("dev")
  .add(
    HttpApiEndpoint.post("faucet", "/dev/faucet", {
      payload: FaucetRequest,
      success: FaucetResult,
      error: [BadRequestError, NotFoundError, ServiceUnavailableError]
    })
  )
  .middleware(Authorization)
  .annotateMerge(OpenApi.annotations({ title: "Local development", description: "Only on local networks." }))
{}
