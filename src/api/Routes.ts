/**
 * The service's own route table, read from the `HttpApi` (plus the two document routes),
 * so the edge can tell "no such path" (404) from "not with this method" (405, with
 * `Allow`), answer `OPTIONS`, and recognise the endpoints a rate limit applies to
 * before the request reaches the router.
 */
import { Context } from "effect"
import { FindMyWay } from "effect/http"
import { HttpApi, type HttpApiGroup } from "effect/http-api"
import { stripVersionPrefix } from "./EdgeUrl.ts"

export interface RouteInfo {
  readonly method: string
  readonly path: string
}

const METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"] as const

export interface RouteTable {
  /** The route `method url` resolves to (HEAD resolves as GET). */
  readonly find: (method: string, url: string) => RouteInfo | undefined
  /** Methods the path answers, empty when the path is unknown. */
  readonly allowed: (url: string) => ReadonlyArray<string>
}

/**
 * The route table of the composed contract, provided at the top (src/Server.ts): the edge sits
 * below the features, so it is given their routes rather than importing the contract.
 */
export class ServiceRoutes extends Context.Service<ServiceRoutes, RouteTable>()("das/api/ServiceRoutes") {}

export const makeRouteTable = <Id extends string, Groups extends HttpApiGroup.Constraint>(
  api: HttpApi.HttpApi<Id, Groups>,
  extra: ReadonlyArray<RouteInfo> = []
): RouteTable => {
  // Long parameters still match here: the router refuses them later with a 400.
  const router = FindMyWay.make<RouteInfo>({ maxParamLength: 1 << 16 })
  const add = (route: RouteInfo) => router.on(route.method, route.path as `/${string}`, route)
  HttpApi.reflect(api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => add({ method: endpoint.method, path: endpoint.path })
  })
  extra.forEach(add)
  const find = (method: string, url: string) => router.find(method === "HEAD" ? "GET" : method, url)?.handler
  const allowed = (url: string) => {
    const methods: Array<string> = METHODS.filter((m) => router.find(m, url) !== undefined)
    if (methods.length === 0) return methods
    if (methods.includes("GET")) methods.push("HEAD")
    methods.push("OPTIONS")
    return methods
  }
  return { find, allowed }
}

/** The document routes served beside the API (`Server.ts`). */
export const documentRoutes: ReadonlyArray<RouteInfo> = [
  { method: "GET", path: "/openapi.json" },
  { method: "GET", path: "/docs" },
  // The pages beside the API (src/reference/Http.ts).
  { method: "GET", path: "/" },
  { method: "GET", path: "/docs/assets/:file" },
  { method: "GET", path: "/console" },
  { method: "GET", path: "/console/app.js" },
  { method: "GET", path: "/console/config" },
  // The agents' MCP server, Streamable HTTP (src/mcp/Http.ts): POST only, so GET and DELETE answer 405.
  { method: "POST", path: "/mcp" }
]

/**
 * Endpoints limited per signer: every build, a delegated action (which reserves budget) and an
 * ERC-7715 request (which builds).
 * Not the kill-switches: a revoke or an account freeze must always be buildable, even while
 * someone holding a stolen session spends the signer's build budget.
 */
export const isBuildRoute = (route: RouteInfo): boolean =>
  route.method === "POST" &&
  route.path !== "/account/rules/build" &&
  (route.path.endsWith("/build") || route.path === "/delegations/:delegationId/actions" ||
    // ERC-7715 requests build grants (the JSON-RPC endpoint counts every call; its revoke has the HTTP twin and /delegations/{id}/revoke).
    // An agent's ask builds the owner's grant too.
    route.path === "/permissions/request" || route.path === "/permissions/asks" || route.path === "/wallet")


/**
 * A server span's name: the method and the route's template (`GET /accounts/:accountId`, as
 * OpenTelemetry's HTTP conventions name it), never the path itself (ids, unbounded names); an
 * unknown path is the method alone.
 */
export const spanNameOf = (routes: RouteTable, method: string, url: string): string => {
  const q = url.indexOf("?")
  const route = routes.find(method, stripVersionPrefix(q < 0 ? url : url.slice(0, q)))
  return route === undefined ? method : `${method} ${route.path}`
}
