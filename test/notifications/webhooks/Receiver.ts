/** A real loopback HTTP receiver for webhook tests and the benchmark: records every request, answers a scripted status. */
import { createServer, type Server } from "node:http"

export interface Received {
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly body: string
  readonly at: number
}

export interface Receiver {
  readonly url: string
  readonly received: Array<Received>
  /** The status of the next answers (default 200): `answer = () => 500` etc. */
  answer: (req: Received, n: number) => number
  onRequest?: ((r: Received) => void) | undefined
  waitFor(predicate: () => boolean, timeoutMs?: number): Promise<void>
  close(): Promise<void>
}

export const startReceiver = (): Promise<Receiver> =>
  new Promise((resolve) => {
    const received: Array<Received> = []
    let server: Server
    const receiver: Receiver = {
      url: "",
      received,
      answer: () => 200,
      onRequest: undefined,
      waitFor: (predicate, timeoutMs = 10_000) =>
        new Promise((ok, fail) => {
          const started = Date.now()
          const tick = () => {
            if (predicate()) return ok()
            if (Date.now() - started > timeoutMs) return fail(new Error(`receiver wait timed out (${received.length} received)`))
            setTimeout(tick, 20)
          }
          tick()
        }),
      close: () => new Promise((ok) => {
        server.closeAllConnections()
        server.close(() => ok())
      })
    }
    server = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const r = { headers: req.headers, body: Buffer.concat(chunks).toString("utf8"), at: performance.now() }
        received.push(r)
        receiver.onRequest?.(r)
        res.statusCode = receiver.answer(r, received.length)
        res.end("ok")
      })
    })
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      ;(receiver as { url: string }).url = `http://127.0.0.1:${typeof address === "object" && address !== null ? address.port : 0}/hook`
      resolve(receiver)
    })
  })
