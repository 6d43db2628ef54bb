/**
 * The Node HTTP server the service listens with. Node refuses some requests before the
 * application sees them (headers over `maxHeaderSize`, a request line it cannot parse);
 * its own answers have no body, so `clientError` writes the contract's envelope instead.
 */
import { createServer, type Server } from "node:http"
import type { Duplex } from "node:stream"

const envelopeReply = (status: number, reason: string, code: string, message: string): string => {
  const body = JSON.stringify({ error: { code, message } })
  return `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${
    Buffer.byteLength(body)
  }\r\nConnection: close\r\n\r\n${body}`
}

const replyFor = (error: NodeJS.ErrnoException, maxHeaderBytes: number): string | undefined => {
  switch (error.code) {
    case "HPE_HEADER_OVERFLOW":
      return envelopeReply(
        431,
        "Request Header Fields Too Large",
        "headers_too_large",
        `The request line and headers are larger than ${maxHeaderBytes} bytes`
      )
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return envelopeReply(408, "Request Timeout", "request_timeout", "The request was not received in time")
    case "ECONNRESET":
      return undefined
    default:
      return envelopeReply(400, "Bad Request", "bad_request", "The request could not be parsed as HTTP")
  }
}

export const makeNodeServer = (options: { readonly maxHeaderBytes: number }): Server => {
  const server = createServer({ maxHeaderSize: options.maxHeaderBytes })
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // As Node's own handler: never write into a response already under way on this socket.
    const inFlight = (socket as Duplex & { _httpMessage?: { headersSent?: boolean } })._httpMessage
    const reply = socket.writable && inFlight?.headersSent !== true ? replyFor(error, options.maxHeaderBytes) : undefined
    if (reply === undefined) {
      socket.destroy()
      return
    }
    socket.end(reply)
  })
  // CONNECT (a proxy tunnel) is no request this service answers; Node would drop the socket.
  server.on("connect", (_request, socket: Duplex) => {
    socket.end(envelopeReply(405, "Method Not Allowed", "method_not_allowed", "CONNECT is not supported"))
  })
  return server
}
