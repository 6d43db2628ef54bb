/**
 * Who signs and how the console talks to the service: an injected EIP-1193 wallet or a local dev
 * key (a development aid: it stays in the page), the bearer session from Sign-In with Ethereum,
 * JSON calls with the error envelope's message, and an operation signed then relayed until it settles.
 */
import type { Hex, LocalAccount } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { createSiweMessage } from "viem/siwe"

export interface Eip1193 {
  request(args: { method: string; params?: ReadonlyArray<unknown> }): Promise<any>
}

export interface Signer {
  readonly address: Hex
  readonly kind: "wallet" | "dev key"
  signMessage(message: string): Promise<Hex>
  signTypedData(typedData: any): Promise<Hex>
  /** Reads the chain through the wallet's RPC; absent for a dev key. */
  readonly rpc?: (method: string, params: ReadonlyArray<unknown>) => Promise<any>
}

export class ApiError extends Error {
  constructor(message: string, readonly status: number, readonly body: any) {
    super(message)
  }
}

/** uint256 fields travel as decimal strings to a wallet (bigints have no JSON form). */
const json = (value: unknown) => JSON.stringify(value, (_k, v) => (typeof v === "bigint" ? v.toString() : v))

export const walletSigner = async (provider: Eip1193): Promise<Signer> => {
  const [address] = await provider.request({ method: "eth_requestAccounts" })
  return {
    address,
    kind: "wallet",
    signMessage: (message) => provider.request({ method: "personal_sign", params: [message, address] }),
    signTypedData: (typedData) => provider.request({ method: "eth_signTypedData_v4", params: [address, json(typedData)] }),
    rpc: (method, params) => provider.request({ method, params })
  }
}

export const devKeySigner = (key: Hex): Signer => {
  const account: LocalAccount = privateKeyToAccount(key)
  return {
    address: account.address,
    kind: "dev key",
    signMessage: (message) => account.signMessage({ message }),
    signTypedData: (typedData) => account.signTypedData!(typedData)
  }
}

/** A delegation's typed data with its salt as the bigint a signer encodes (the wire has a decimal string). */
export const withBigSalt = (typedData: any) => ({ ...typedData, message: { ...typedData.message, salt: BigInt(typedData.message.salt) } })

export interface Session {
  readonly signer: Signer
  readonly token: string
  readonly call: (method: string, path: string, body?: unknown) => Promise<any>
}

const request = async (token: string | undefined, method: string, path: string, body?: unknown): Promise<any> => {
  const res = await fetch(path, {
    method,
    headers: {
      ...(token === undefined ? {} : { authorization: `Bearer ${token}` }),
      ...(body === undefined ? {} : { "content-type": "application/json" })
    },
    ...(body === undefined ? {} : { body: json(body) })
  })
  const text = await res.text()
  const parsed = text === "" ? undefined : JSON.parse(text)
  if (!res.ok) throw new ApiError(parsed?.error?.message ?? `HTTP ${res.status}`, res.status, parsed)
  return parsed
}

export const signIn = async (signer: Signer): Promise<Session> => {
  const nonce = await request(undefined, "POST", "/auth/nonce")
  const message = createSiweMessage({
    address: signer.address,
    chainId: nonce.chainId,
    domain: nonce.domain,
    uri: nonce.uri,
    nonce: nonce.nonce,
    version: "1",
    issuedAt: new Date(),
    statement: "Sign in to the delegated-authority service."
  })
  const session = await request(undefined, "POST", "/auth/session", { message, signature: await signer.signMessage(message) })
  const token = session.token as string
  return { signer, token, call: (method, path, body) => request(token, method, path, body) }
}

/** Signs a build's operation, relays it and waits until it settles; a failed one is an error with its reason. */
export const signAndRelay = async (session: Session, build: any) => {
  const signature = await session.signer.signTypedData(build.typedData)
  let receipt = await session.call("POST", "/userops", { ...build.userOp, signature })
  for (let i = 0; i < 200 && receipt.status === "submitted"; i++) {
    await new Promise((r) => setTimeout(r, 300))
    receipt = await session.call("GET", `/userops/${receipt.userOpId}`)
  }
  if (receipt.status !== "included" || receipt.outcome === "reverted") throw new Error(`the operation ${receipt.status}${receipt.reason ? `: ${receipt.reason}` : ""}`)
  return receipt
}

/** A grant's enable build signed: the operation and each leg's delegation (the chain checks both). */
export const signGrant = async (signer: Signer, build: any) => ({
  userOp: { ...build.enableUserOp, signature: await signer.signTypedData(build.typedData) },
  userOpHash: build.userOpHash,
  delegationSignatures: await Promise.all(
    (build.delegations as ReadonlyArray<any>).map(async (leg) => ({
      permissionId: leg.permissionId,
      signature: await signer.signTypedData(withBigSalt(leg.typedData))
    }))
  )
})

/** The notification stream read with fetch (EventSource cannot send the bearer header): each frame's JSON. */
export const listen = async (session: Session, onNotification: (n: any) => void, signal: AbortSignal) => {
  const res = await fetch("/notifications/stream", {
    headers: { authorization: `Bearer ${session.token}`, accept: "text/event-stream" },
    signal
  })
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ""
  for (;;) {
    const { value, done } = await reader.read()
    if (done) return
    buffer += value
    let cut: number
    while ((cut = buffer.indexOf("\n\n")) >= 0) {
      const frame = buffer.slice(0, cut)
      buffer = buffer.slice(cut + 2)
      const data = frame.split("\n").filter((l) => l.startsWith("data:")).map((l) => l.slice(5).trim()).join("\n")
      if (data !== "") onNotification(JSON.parse(data))
    }
  }
}
