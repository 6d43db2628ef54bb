/**
 * A facilitator of the loopback world on its own port: the package's facilitator
 * (`@das/x402-erc7710`: the ERC-7710 mechanism on `@x402/core`'s `x402Facilitator`, its HTTP
 * interface) for one chain. Used by the demo, tests and bench; `npm start` runs its own
 * (src/payments/FacilitatorServer.ts).
 */
import { type Erc7710FacilitatorScheme, facilitatorApp, type FacilitatorServiceOptions, makeFacilitator } from "@das/x402-erc7710"
import type { x402Facilitator } from "@x402/core/facilitator"
import { listen, type Listening } from "./Listen.ts"

export type { FacilitatorServiceOptions }

export interface RunningFacilitator extends Listening {
  /** The settlement address the payment delegations must name. */
  readonly address: `0x${string}`
  readonly facilitator: x402Facilitator
  readonly schemes: ReadonlyArray<Erc7710FacilitatorScheme>
}

export const startFacilitator = async (
  options: FacilitatorServiceOptions & { readonly host?: string; readonly port?: number }
): Promise<RunningFacilitator> => {
  const made = makeFacilitator(options)
  const listening = await listen(facilitatorApp(made.facilitator), {
    ...(options.host === undefined ? {} : { host: options.host }),
    ...(options.port === undefined ? {} : { port: options.port })
  })
  return { ...listening, address: made.address, facilitator: made.facilitator, schemes: made.schemes }
}
