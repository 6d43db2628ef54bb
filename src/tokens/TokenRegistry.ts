/**
 * Token registry: symbol → address and decimals, per chain. Budgets and actions name
 * tokens by symbol; everything on chain needs the address and the decimals.
 *
 * Configuration: `TOKEN_REGISTRY`, a JSON array of
 * `{ chainId, symbol, address, decimals, name? }`. Besides it, every served chain
 * contributes its own stablecoins (`tokens.usd` / `.usdt` / `.dai` of its network: USDC / USDT / DAI
 * on the local networks). Entries from `TOKEN_REGISTRY` come first and win on a clash.
 * Symbols match case-insensitively; addresses are returned lowercase.
 */
import { Config, Context, Effect, Layer, Option, Schema } from "effect"
import { BadRequest } from "../api/Errors.ts"
import { Chains } from "../chain/Chains.ts"
import { Address } from "../domain/Primitives.ts"

export const TokenEntry = Schema.Struct({
  chainId: Schema.Int,
  symbol: Schema.String.check(Schema.isMinLength(1)),
  address: Address,
  decimals: Schema.Int.check(Schema.isBetween({ minimum: 0, maximum: 36 })),
  name: Schema.optionalKey(Schema.String)
})
export type TokenEntry = typeof TokenEntry.Type

export interface Token {
  readonly chainId: number
  readonly symbol: string
  readonly name: string
  readonly address: Address
  readonly decimals: number
}

export class TokenRegistry extends Context.Service<TokenRegistry, {
  readonly all: ReadonlyArray<Token>
  /** The token `symbol` on `chainId`; an unknown one is a 400 naming the known symbols. */
  resolve(chainId: number, symbol: string): Effect.Effect<Token, BadRequest>
  byAddress(chainId: number, address: string): Token | undefined
}>()("das/tokens/TokenRegistry") {
  static readonly make = (entries: ReadonlyArray<Token>) => {
    const seen = new Set<string>()
    const all: Array<Token> = []
    for (const t of entries) {
      const key = `${t.chainId}:${t.symbol.toUpperCase()}`
      if (seen.has(key)) continue
      seen.add(key)
      all.push({ ...t, address: t.address.toLowerCase() })
    }
    const resolve = (chainId: number, symbol: string) => {
      const found = all.find((t) => t.chainId === chainId && t.symbol.toUpperCase() === symbol.toUpperCase())
      if (found !== undefined) return Effect.succeed(found)
      const known = all.filter((t) => t.chainId === chainId).map((t) => t.symbol)
      return Effect.fail(
        new BadRequest({
          message: known.length === 0
            ? `Unknown token ${JSON.stringify(symbol)}: no tokens are known on chain ${chainId}`
            : `Unknown token ${JSON.stringify(symbol)} on chain ${chainId}; known: ${known.join(", ")}`,
          details: { symbol, chainId, known }
        })
      )
    }
    const byAddress = (chainId: number, address: string) =>
      all.find((t) => t.chainId === chainId && t.address === address.toLowerCase())
    return TokenRegistry.of({ all, resolve, byAddress })
  }

  /** `TOKEN_REGISTRY` (optional) plus every served chain's own stablecoins. */
  static readonly layer = Layer.effect(
    TokenRegistry,
    Effect.gen(function*() {
      const chains = yield* Chains
      const configured = yield* Config.schema(Schema.fromJsonString(Schema.Array(TokenEntry)), "TOKEN_REGISTRY").pipe(
        Config.option
      )
      const fromConfig: ReadonlyArray<Token> = Option.getOrElse(configured, () => []).map((e) => ({
        chainId: e.chainId,
        symbol: e.symbol,
        name: e.name ?? e.symbol,
        address: e.address,
        decimals: e.decimals
      }))
      const fromNetwork: ReadonlyArray<Token> = chains.all.flatMap(({ network }) =>
        [network.tokens.usd, network.tokens.usdt, ...(network.tokens.dai === undefined ? [] : [network.tokens.dai])].map((t) => ({
          chainId: network.chainId,
          symbol: t.symbol,
          name: t.name,
          address: t.address,
          decimals: t.decimals
        }))
      )
      return TokenRegistry.make([...fromConfig, ...fromNetwork])
    })
  )
}
