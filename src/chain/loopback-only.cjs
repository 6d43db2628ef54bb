/**
 * Preloaded into Alto (`node --require <this file> alto.js --das-listen-host <host> …`,
 * src/chain/LocalNetwork.ts). Alto listens on every interface and has no option to change it
 * (@pimlico/alto 0.0.20, esm/rpc/server.js: `fastify.listen({ port, host: "0.0.0.0" })`). In
 * this process, a listen on all interfaces binds the host given as `--das-listen-host` instead
 * (default 127.0.0.1; the local network's `LOCAL_NETWORK_HOST`). The option is taken out of
 * `process.argv` before Alto reads its arguments. A listen on a named host is left alone.
 */
"use strict"
const net = require("node:net")

const OPTION = "--das-listen-host"
const at = process.argv.indexOf(OPTION)
const host = at >= 0 && process.argv[at + 1] ? process.argv[at + 1] : "127.0.0.1"
if (at >= 0) process.argv.splice(at, 2)
const everywhere = (h) => h === undefined || h === null || h === "" || h === "0.0.0.0" || h === "::"
const listen = net.Server.prototype.listen

net.Server.prototype.listen = function(...args) {
  const [first, second] = args
  if (first !== null && typeof first === "object" && "port" in first && everywhere(first.host)) {
    args[0] = { ...first, host }
  } else if (typeof first === "number" || (typeof first === "string" && /^\d+$/.test(first))) {
    // listen(port[, host][, backlog][, callback])
    if (typeof second === "string") {
      if (everywhere(second)) args[1] = host
    } else {
      args.splice(1, 0, host)
    }
  }
  return listen.apply(this, args)
}
