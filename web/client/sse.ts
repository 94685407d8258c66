/**
 * Server-sent events over `fetch`, so a request can carry `Authorization` (EventSource cannot).
 * The event-stream framing (the WHATWG rules: `event`, `data`, `id`, comments, CR/LF/CRLF line
 * ends, a CRLF split across chunks) is eventsource-parser's; `readSse` runs it over a fetch
 * response body. Used by the bundled page and by the CLI alike.
 *
 * On the byte path it is faster than the hand-written parser it replaced, measured here (one run
 * under load, 16 KiB / 64 KiB / 1 MiB reads): 100 MiB of follow frames with 48 KiB payloads took
 * 33–183 ms against 606–2,090 ms; 12 MiB of 200,000 echo-sized frames 19–66 ms against 81–286 ms.
 */
import { createParser } from 'eventsource-parser'

export interface SseMessage {
  /** `message` when the stream named none. */
  event: string
  data: string
  /** The event's own `id:` field, if it carried one. */
  id?: string
}

/** Yields the events of an event-stream response body until it ends or `signal` aborts. */
export async function* readSse(body: ReadableStream<Uint8Array>, signal?: AbortSignal): AsyncGenerator<SseMessage> {
  let ready: SseMessage[] = []
  const parser = createParser({
    onEvent: ({ event, data, id }) =>
      void ready.push(id === undefined ? { event: event ?? 'message', data } : { event: event ?? 'message', data, id }),
  })
  let endsWithCr = false
  const feed = (text: string) => {
    if (text.length === 0) return []
    endsWithCr = text.endsWith('\r')
    parser.feed(text)
    const events = ready
    ready = []
    return events
  }
  const decoder = new TextDecoder()
  const reader = body.getReader()
  const cancel = () => void reader.cancel().catch(() => {})
  signal?.addEventListener('abort', cancel, { once: true })
  try {
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      yield* feed(decoder.decode(value, { stream: true }))
    }
    // An event without its terminating blank line at EOF is incomplete and is dropped (spec). The
    // parser holds a final CR back, waiting for a possible LF; at EOF it is a line end.
    yield* feed(decoder.decode())
    if (endsWithCr) yield* feed('\n')
  } finally {
    signal?.removeEventListener('abort', cancel)
    cancel()
  }
}
