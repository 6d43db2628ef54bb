/** Serve an express app on loopback (port 0: a free one) and close it with every open connection. */
import type { Express } from "express"
import type { AddressInfo } from "node:net"

export interface Listening {
  readonly url: string
  readonly close: () => Promise<void>
}

export const listen = (app: Express, options: { readonly host?: string; readonly port?: number } = {}): Promise<Listening> =>
  new Promise((resolve, reject) => {
    const host = options.host ?? "127.0.0.1"
    const server = app.listen(options.port ?? 0, host, (error?: Error) => {
      if (error !== undefined) return reject(error)
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
    server.once("error", reject)
  })
