/**
 * Signs a build the service answered, as a wallet would, for the curl walk-through (README):
 * reads the build's JSON on stdin and prints the body to send next.
 *
 *   curl ... /delegations/build | PRIVATE_KEY=0x… npm run -s sign-build -- grant    # → body of POST /delegations
 *   curl ... /delegations/{id}/actions | PRIVATE_KEY=0x… npm run -s sign-build -- userop   # → body of POST /userops
 */
import type { Hex } from "viem"
import { privateKeyToAccount } from "viem/accounts"

const mode = process.argv[2]
const key = process.env.PRIVATE_KEY as Hex | undefined
if ((mode !== "grant" && mode !== "userop") || key === undefined) {
  console.error("usage: PRIVATE_KEY=0x… sign-build (grant | userop) < build.json")
  process.exit(2)
}
const signer = privateKeyToAccount(key)
const chunks: Array<Buffer> = []
for await (const chunk of process.stdin) chunks.push(chunk as Buffer)
const build = JSON.parse(Buffer.concat(chunks).toString("utf8"))
if (build.error !== undefined) {
  console.error(JSON.stringify(build))
  process.exit(1)
}
const signature = await signer.signTypedData(build.typedData)
if (mode === "userop") {
  console.log(JSON.stringify({ ...build.userOp, signature }))
} else {
  const delegationSignatures = await Promise.all(
    build.delegations.map(async (leg: any) => ({
      permissionId: leg.permissionId,
      signature: await signer.signTypedData({ ...leg.typedData, message: { ...leg.typedData.message, salt: BigInt(leg.typedData.message.salt) } })
    }))
  )
  console.log(JSON.stringify({ userOp: { ...build.enableUserOp, signature }, userOpHash: build.userOpHash, intentType: "delegation_enable", delegationSignatures }))
}
