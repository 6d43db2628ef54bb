/**
 * Raw HTTP for edge tests: what a hostile or broken client sends, below the typed client.
 */
import { Effect } from "effect"
import * as net from "node:net"

export interface RawResponse {
  readonly status: number
  readonly headers: Headers
  readonly text: string
  readonly json: unknown
}

const parse = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** fetch, reading the whole answer; never fails on a status. */
export const request = (url: string, init: RequestInit = {}) =>
  Effect.promise(async (): Promise<RawResponse> => {
    const res = await fetch(url, init)
    const text = await res.text()
    return { status: res.status, headers: res.headers, text, json: parse(text) }
  })

/** Whether a body is the contract's error envelope. */
export const isEnvelope = (json: unknown): boolean => {
  if (typeof json !== "object" || json === null || !("error" in json)) return false
  const error = (json as { error: unknown }).error
  return typeof error === "object" && error !== null &&
    typeof (error as { code?: unknown }).code === "string" &&
    typeof (error as { message?: unknown }).message === "string"
}

export const codeOf = (json: unknown): string | undefined =>
  isEnvelope(json) ? (json as { error: { code: string } }).error.code : undefined

/** Writes `raw` bytes on a fresh TCP connection and returns everything the server sends until it closes. */
export const rawExchange = (port: number, raw: string | Buffer, timeoutMs = 5000) =>
  Effect.promise(() =>
    new Promise<{ readonly status: number; readonly head: string; readonly body: string }>((resolve, reject) => {
      const socket = net.connect(port, "127.0.0.1")
      const chunks: Array<Buffer> = []
      const timer = setTimeout(() => {
        socket.destroy()
        reject(new Error("no answer in time"))
      }, timeoutMs)
      socket.on("data", (d) => chunks.push(d))
      socket.on("error", () => {})
      socket.on("close", () => {
        clearTimeout(timer)
        const text = Buffer.concat(chunks).toString("utf8")
        const [head = "", body = ""] = text.split("\r\n\r\n", 2)
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0)
        resolve({ status, head, body })
      })
      socket.write(raw)
    })
  )

export const portOf = (baseUrl: string) => Number(new URL(baseUrl).port)

/** A loopback TCP proxy that can be cut (listener closed, live connections dropped) and restored on the same port. */
export const tcpProxy = (targetHost: string, targetPort: number) =>
  Effect.acquireRelease(
    Effect.promise(async () => {
      const sockets = new Set<net.Socket>()
      let server: net.Server | undefined
      let port = 0
      const listen = () =>
        new Promise<void>((resolve) => {
          server = net.createServer((client) => {
            const upstream = net.connect(targetPort, targetHost)
            sockets.add(client).add(upstream)
            const drop = () => {
              client.destroy()
              upstream.destroy()
              sockets.delete(client)
              sockets.delete(upstream)
            }
            client.on("error", drop).on("close", drop)
            upstream.on("error", drop).on("close", drop)
            client.pipe(upstream)
            upstream.pipe(client)
          })
          server.listen(port, "127.0.0.1", () => {
            port = (server!.address() as net.AddressInfo).port
            resolve()
          })
        })
      const cut = () =>
        new Promise<void>((resolve) => {
          for (const s of sockets) s.destroy()
          sockets.clear()
          if (server === undefined) return resolve()
          server.close(() => resolve())
          server = undefined
        })
      await listen()
      return { port: () => port, cut, restore: listen }
    }),
    (proxy) => Effect.promise(() => proxy.cut())
  )
