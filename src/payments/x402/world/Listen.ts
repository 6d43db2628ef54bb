/** Serve an express app on loopback (port 0: a free one) and close it with every open connection. */
import type { Express } from "express"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"

export interface Listening {
  readonly url: string
  readonly close: () => Promise<void>
}

/**
 * A PAYMENT-SIGNATURE header carries the whole delegation chain: about 11 kB for a grant with
 * one recipient, 41 kB with 32 (docs/payments.md). Node refuses headers over 16 KiB by default
 * (431), so the world's servers accept 64 KiB.
 */
export const MAX_HEADER_BYTES = 64 * 1024

export const listen = (app: Express, options: { readonly host?: string; readonly port?: number } = {}): Promise<Listening> =>
  new Promise((resolve, reject) => {
    const host = options.host ?? "127.0.0.1"
    const server = createServer({ maxHeaderSize: MAX_HEADER_BYTES }, app)
    server.once("error", reject)
    server.listen(options.port ?? 0, host, () => {
      const { port } = server.address() as AddressInfo
      resolve({
        url: `http://${host}:${port}`,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done())
            // Keep-alive connections of fetch clients would hold the server open.
            server.closeAllConnections()
          })
      })
    })
  })
