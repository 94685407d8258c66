/**
 * Server-sent events over `fetch`, so a request can carry `Authorization` (EventSource cannot).
 * `SseParser` is the pure framing core (the WHATWG event-stream rules: `event`, `data`, `id`,
 * comments, CR/LF/CRLF line ends); `readSse` runs it over a fetch response body. Used by the
 * bundled page and by the CLI alike.
 */

export interface SseEvent {
  /** `message` when the stream named none. */
  event: string
  data: string
  /** The event's own `id:` field, if it carried one. */
  id?: string
}

/** Incremental event-stream parser: feed text as it arrives, get complete events back. */
export class SseParser {
  #buffer = ''
  #event = ''
  #data: string[] = []
  #id: string | undefined
  #sawCr = false

  /** Parses a chunk; returns the events it completed (possibly none). */
  feed(chunk: string): SseEvent[] {
    const events: SseEvent[] = []
    let text = chunk
    // A CRLF split across chunks: the LF belongs to the CR already taken as a line end.
    if (this.#sawCr && text.startsWith('\n')) text = text.slice(1)
    this.#sawCr = false
    this.#buffer += text
    let start = 0
    for (let i = 0; i < this.#buffer.length; i++) {
      const ch = this.#buffer[i]
      if (ch !== '\n' && ch !== '\r') continue
      this.#line(this.#buffer.slice(start, i), events)
      if (ch === '\r') {
        if (i + 1 === this.#buffer.length) this.#sawCr = true
        else if (this.#buffer[i + 1] === '\n') i++
      }
      start = i + 1
    }
    this.#buffer = this.#buffer.slice(start)
    return events
  }

  #line(line: string, events: SseEvent[]): void {
    if (line === '') {
      if (this.#data.length > 0) {
        const event: SseEvent = { event: this.#event || 'message', data: this.#data.join('\n') }
        if (this.#id !== undefined) event.id = this.#id
        events.push(event)
      }
      this.#event = ''
      this.#data = []
      this.#id = undefined
      return
    }
    if (line.startsWith(':')) return // comment (heartbeat)
    const colon = line.indexOf(':')
    const field = colon === -1 ? line : line.slice(0, colon)
    let value = colon === -1 ? '' : line.slice(colon + 1)
    if (value.startsWith(' ')) value = value.slice(1)
    if (field === 'event') this.#event = value
    else if (field === 'data') this.#data.push(value)
    else if (field === 'id' && !value.includes('\0')) this.#id = value
  }
}

/** Yields the events of an event-stream response body until it ends or `signal` aborts. */
export async function* readSse(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<SseEvent> {
  const parser = new SseParser()
  const decoder = new TextDecoder()
  const reader = body.getReader()
  const cancel = () => void reader.cancel().catch(() => {})
  signal?.addEventListener('abort', cancel, { once: true })
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      for (const event of parser.feed(decoder.decode(value, { stream: true }))) yield event
    }
    // An event without its terminating blank line at EOF is incomplete and is dropped (spec).
    for (const event of parser.feed(decoder.decode())) yield event
  } finally {
    signal?.removeEventListener('abort', cancel)
    cancel()
  }
}
