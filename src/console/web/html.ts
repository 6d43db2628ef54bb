/** Views as tagged templates over Preact (htm's own binding): text from the API is always a text node, never HTML. */
export { html } from "htm/preact"
