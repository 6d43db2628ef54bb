/** A minimal real SSE reader over fetch for tests and the benchmark: events (id, data) and comment lines. */
export interface SseEvent {
  readonly id: string | undefined
  readonly data: string
}

export interface SseClient {
  readonly status: number
  readonly events: Array<SseEvent>
  readonly comments: Array<string>
  /** Resolves once `predicate` holds (checked on every chunk), rejects after `timeoutMs`. */
  waitFor(predicate: (c: SseClient) => boolean, timeoutMs?: number): Promise<void>
  close(): void
  /** Resolves when the server ends the stream. */
  readonly ended: Promise<void>
  onEvent?: ((e: SseEvent) => void) | undefined
}

export const openSse = async (url: string, headers: Record<string, string>): Promise<SseClient> => {
  const abort = new AbortController()
  const res = await fetch(url, { headers, signal: abort.signal })
  const waiters = new Set<() => void>()
  const client: SseClient = {
    status: res.status,
    events: [],
    comments: [],
    waitFor: (predicate, timeoutMs = 5000) =>
      new Promise<void>((resolve, reject) => {
        if (predicate(client)) return resolve()
        const check = () => {
          if (predicate(client)) {
            waiters.delete(check)
            clearTimeout(timer)
            resolve()
          }
        }
        const timer = setTimeout(() => {
          waiters.delete(check)
          reject(new Error(`SSE wait timed out; events: ${JSON.stringify(client.events)}`))
        }, timeoutMs)
        waiters.add(check)
      }),
    close: () => abort.abort(),
    ended: Promise.resolve(),
    onEvent: undefined
  }
  if (res.body === null || res.status !== 200) return client
  const reader = res.body.getReader()
  const decoder = new TextDecoder()
  let buffer = ""
  ;(client as { ended: Promise<void> }).ended = (async () => {
    try {
      while (true) {
        const { done, value } = await reader.read()
        if (done) break
        buffer += decoder.decode(value, { stream: true })
        let i: number
        while ((i = buffer.indexOf("\n\n")) >= 0) {
          const block = buffer.slice(0, i)
          buffer = buffer.slice(i + 2)
          let id: string | undefined
          const data: Array<string> = []
          for (const line of block.split("\n")) {
            if (line.startsWith(":")) client.comments.push(line.slice(1).trim())
            else if (line.startsWith("id: ")) id = line.slice(4)
            else if (line.startsWith("data: ")) data.push(line.slice(6))
          }
          if (data.length > 0) {
            const e = { id, data: data.join("\n") }
            client.events.push(e)
            client.onEvent?.(e)
          }
        }
        for (const w of [...waiters]) w()
      }
    } catch {
      // aborted
    }
  })()
  return client
}
