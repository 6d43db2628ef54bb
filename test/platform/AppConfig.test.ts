/** Safe defaults: the SIWE domain and URI follow HOST and PORT unless set. */
import { assert, describe, it } from "@effect/vitest"
import { ConfigProvider, Effect } from "effect"
import { AppConfig } from "../../src/platform/AppConfig.ts"

const configWith = (env: Record<string, string>) =>
  Effect.provide(AppConfig.config, ConfigProvider.layer(ConfigProvider.fromUnknown(env)))

describe("AppConfig", () => {
  it.effect("sign-in names where the service listens unless SIWE_DOMAIN / SIWE_URI are set", () =>
    Effect.gen(function*() {
      const byDefault = yield* configWith({})
      assert.deepStrictEqual([byDefault.siweDomain, byDefault.siweUri], ["localhost:8080", "http://localhost:8080"])
      const port = yield* configWith({ PORT: "9123" })
      assert.deepStrictEqual([port.siweDomain, port.siweUri], ["localhost:9123", "http://localhost:9123"])
      const host = yield* configWith({ HOST: "10.1.2.3", PORT: "9000" })
      assert.deepStrictEqual([host.siweDomain, host.siweUri], ["10.1.2.3:9000", "http://10.1.2.3:9000"])
      const everywhere = yield* configWith({ HOST: "0.0.0.0", PORT: "9000" })
      assert.strictEqual(everywhere.siweDomain, "localhost:9000")
      const set = yield* configWith({ PORT: "9000", SIWE_DOMAIN: "app.example", SIWE_URI: "https://app.example/login" })
      assert.deepStrictEqual([set.siweDomain, set.siweUri], ["app.example", "https://app.example/login"])
    }))
})
