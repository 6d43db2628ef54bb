/** Sign in: with the browser's wallet, or (local networks only) a development key that never leaves the page. */
import { useState } from "preact/hooks"
import { html } from "./html.ts"

export const SignIn = ({ walletPresent, devKey, busy, onWallet, onDevKey }: {
  walletPresent: boolean
  devKey: boolean
  busy: boolean
  onWallet: () => void
  onDevKey: (key: string) => void
}) => {
  const [key, setKey] = useState("")
  return html`<section id="signin" aria-labelledby="signin-title" class="card narrow">
    <h2 id="signin-title">Sign in</h2>
    <p>Sign a message with your wallet: it proves the key is yours and moves nothing.</p>
    <p><button type="button" id="wallet" class="primary" disabled=${!walletPresent || busy} aria-describedby="wallet-reason" onClick=${onWallet}>Sign in with your wallet</button></p>
    <p id="wallet-reason" class="small muted">${walletPresent
      ? "Your wallet will ask you to sign."
      : "No wallet found in this browser (no EIP-1193 provider such as MetaMask): install or unlock one, then reload this page."}</p>
    ${devKey ? html`<form id="devkey-form" class="devkey" onSubmit=${(e: Event) => { e.preventDefault(); onDevKey(key.trim()) }}>
      <h3>Development aid: sign in with a test key</h3>
      <p class="small">Offered only because every chain here is a local test network. The key stays in this page: it signs here, the service never sees it. Never paste a real key.</p>
      <label for="devkey">Test private key</label>
      <input id="devkey" type="password" autocomplete="off" spellcheck="false" placeholder="0x…" value=${key}
        onInput=${(e: Event) => setKey((e.currentTarget as HTMLInputElement).value)} />
      <button type="submit" disabled=${busy}>Sign in with the test key</button>
    </form>` : null}
  </section>`
}
