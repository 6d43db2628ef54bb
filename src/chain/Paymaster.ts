/**
 * The sponsoring paymaster: EntryPoint v0.7's sample `VerifyingPaymaster`. It pays for an
 * operation whose `paymasterData` = abi.encode(validUntil, validAfter) ‖ signature, the
 * signature being the paymaster signer's EIP-191 signature of `getHash(op, validUntil,
 * validAfter)`. The hash covers the paymaster gas limits, so sign after estimation.
 */
import { Context, Effect, Layer, Option, Redacted, Schema } from "effect"
import {
  type Address,
  concat,
  encodeAbiParameters,
  type Hash,
  type Hex,
  keccak256
} from "viem"
import { toPackedUserOperation, type UserOperation } from "viem/account-abstraction"
import { privateKeyToAccount } from "viem/accounts"
import { Network, type NetworkDescription } from "./Network.ts"
import { keccakOfPart } from "./OperationHash.ts"

export interface PaymasterFields {
  readonly paymaster: Address
  readonly paymasterVerificationGasLimit: bigint
  readonly paymasterPostOpGasLimit: bigint
  readonly paymasterData: Hex
}

export class PaymasterError extends Schema.TaggedError<PaymasterError>()("PaymasterError", {
  message: Schema.String,
  cause: Schema.optionalKey(Schema.Defect())
}) {}

/** Generous defaults for estimation; the estimate replaces them. */
const STUB_VERIFICATION_GAS = 100_000n
const STUB_POST_OP_GAS = 0n
/** A real signature by a throwaway key: recovers to a non-signer, so validation fails softly, never reverts. */
const STUB_SIGNATURE: Hex =
  "0xc652dcb8d64f88597c1147eea9dab1cb2ca5bf9624c7e0206b25d40bc20932b62afaea5c8599abdd641013f6140dc6a96977fac913421e217f6f7f145745a0661c"

/** `VerifyingPaymaster.getHash` computed off chain. */
export const verifyingPaymasterHash = (
  op: Omit<UserOperation<"0.7">, "signature">,
  paymaster: Address,
  chainId: number,
  validUntil: number,
  validAfter: number
): Hash => {
  const packed = toPackedUserOperation({ ...op, signature: "0x" } as UserOperation<"0.7">)
  // paymasterAndData[20:52]: the two 16-byte gas limits, read as one uint256.
  const paymasterGas = BigInt(`0x${packed.paymasterAndData.slice(42, 106)}`)
  return keccak256(
    encodeAbiParameters(
      [
        { type: "address" }, { type: "uint256" }, { type: "bytes32" }, { type: "bytes32" }, { type: "bytes32" },
        { type: "uint256" }, { type: "uint256" }, { type: "bytes32" }, { type: "uint256" }, { type: "address" },
        { type: "uint48" }, { type: "uint48" }
      ],
      [
        packed.sender, packed.nonce, keccakOfPart(packed.initCode), keccakOfPart(packed.callData), packed.accountGasLimits,
        paymasterGas, packed.preVerificationGas, packed.gasFees, BigInt(chainId), paymaster,
        validUntil, validAfter
      ]
    )
  )
}

const validity = (validUntil: number, validAfter: number) =>
  encodeAbiParameters([{ type: "uint48" }, { type: "uint48" }], [validUntil, validAfter])

export class Paymaster extends Context.Service<Paymaster, {
  /** `undefined` when the network has no sponsoring paymaster configured. */
  readonly address: Address | undefined
  /** Paymaster fields for gas estimation (well-formed, not a valid signature). */
  readonly stub: Effect.Effect<PaymasterFields, PaymasterError>
  /**
   * Signs sponsorship of `op`, whose gas fields (paymaster ones included) are final;
   * valid for `validForSeconds` from now.
   */
  sponsor(
    op: Omit<UserOperation<"0.7">, "signature" | "paymaster" | "paymasterData"> & {
      readonly paymasterVerificationGasLimit: bigint
      readonly paymasterPostOpGasLimit: bigint
    },
    validForSeconds?: number
  ): Effect.Effect<PaymasterFields, PaymasterError>
}>()("app/chain/Paymaster") {
  static readonly layer = Layer.effect(Paymaster, Network.useSync((network) => makePaymaster(network)))
}

/** The sponsoring paymaster of `network` (one per chain: `Chains`); every call fails when it has none. */
export const makePaymaster = (network: NetworkDescription): Paymaster["Service"] => {
      const info = Option.fromNullishOr(network.paymaster)
      const notConfigured = Effect.fail(new PaymasterError({ message: "no sponsoring paymaster configured" }))
      // Derived once: deriving the key's address is an elliptic-curve multiplication (≈ 0.5 ms) per build otherwise.
      const signer = Option.getOrUndefined(Option.map(info, (p) => privateKeyToAccount(Redacted.value(p.signerKey))))

      const stub = Option.match(info, {
        onNone: () => notConfigured,
        onSome: (p) =>
          Effect.succeed<PaymasterFields>({
            paymaster: p.address,
            paymasterVerificationGasLimit: STUB_VERIFICATION_GAS,
            paymasterPostOpGasLimit: STUB_POST_OP_GAS,
            paymasterData: concat([validity(0, 0), STUB_SIGNATURE])
          })
      }).pipe(Effect.withSpan("Paymaster.stub"))

      const sponsor = Effect.fn("Paymaster.sponsor")(function*(
        op: Parameters<Paymaster["Service"]["sponsor"]>[0],
        validForSeconds = 600
      ) {
        if (Option.isNone(info) || signer === undefined) return yield* notConfigured
        const p = info.value
        const validUntil = Math.floor(Date.now() / 1000) + validForSeconds
        const validAfter = 0
        const withPaymaster = { ...op, paymaster: p.address, paymasterData: "0x" as Hex }
        const hash = verifyingPaymasterHash(withPaymaster, p.address, network.chainId, validUntil, validAfter)
        const signature = yield* Effect.tryPromise({
          try: () => signer.signMessage({ message: { raw: hash } }),
          catch: (cause) => new PaymasterError({ message: "paymaster signature", cause })
        })
        return {
          paymaster: p.address,
          paymasterVerificationGasLimit: op.paymasterVerificationGasLimit,
          paymasterPostOpGasLimit: op.paymasterPostOpGasLimit,
          paymasterData: concat([validity(validUntil, validAfter), signature])
        } satisfies PaymasterFields
      })

      return Paymaster.of({ address: Option.getOrUndefined(Option.map(info, (p) => p.address)), stub, sponsor })
}

