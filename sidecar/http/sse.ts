/**
 * Server-sent events, pulled. A stream is an async generator of events; the HTTP body asks it for
 * the next event only when the client has taken the previous one (the socket drained), so a slow
 * or stalled client holds at most one event here, never a growing queue.
 */
export type SseEvent = { event: string; data: unknown; id?: number } | { comment: string }
/** Events already in SSE framing (UTF-8), written as they are: a hot path (output items) builds
 * its frames straight into one buffer instead of event objects, template strings, a join and a
 * TextEncoder pass, which cost three extra copies of every payload byte. */
export class SseFrames {
  constructor(readonly bytes: Uint8Array) {}
}
/** A source yields single events, a batch of events that go out as one write, or ready frames. */
export type SseYield = SseEvent | readonly SseEvent[] | SseFrames

/** Event data that is already JSON text (e.g. built around a base64 payload, which needs no
 * escaping: JSON.stringify would only spend time scanning it). */
export class RawJson {
  constructor(readonly json: string) {}
}

/** One event in SSE framing. Data is one line of JSON, so it needs no splitting. */
export function formatSse(event: SseEvent): string {
  if ('comment' in event) return `: ${event.comment}\n\n`
  const id = event.id === undefined ? '' : `id: ${event.id}\n`
  const data = event.data instanceof RawJson ? event.data.json : JSON.stringify(event.data)
  return `event: ${event.event}\n${id}data: ${data}\n\n`
}

export type SseSource = (signal: AbortSignal) => AsyncGenerator<SseYield, void, void>

function encode(value: SseEvent | readonly SseEvent[]): string {
  return Array.isArray(value) ? value.map(formatSse).join('') : formatSse(value as SseEvent)
}

/**
 * Starts the generator and waits for its first event before answering, so a failure at the start
 * (a typed error, a replay I/O error) fails the call with a proper status instead of a broken
 * stream. The generator gets a signal that aborts when the client goes away.
 */
export async function sseResponse(source: SseSource, requestSignal?: AbortSignal): Promise<Response> {
  const abort = new AbortController()
  const onRequestAbort = () => abort.abort()
  requestSignal?.addEventListener('abort', onRequestAbort, { once: true })
  const events = source(abort.signal)
  const encoder = new TextEncoder()
  let first: IteratorResult<SseYield, void>
  try {
    first = await events.next()
  } catch (error) {
    requestSignal?.removeEventListener('abort', onRequestAbort)
    throw error
  }
  let pending: IteratorResult<SseYield, void> | undefined = first
  const finish = () => {
    requestSignal?.removeEventListener('abort', onRequestAbort)
    abort.abort()
    void events.return(undefined).catch(() => {})
  }
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          // One event per stream per event-loop turn. A socket that takes a write at once asks for
          // the next event within the same turn (its 'drain' comes on process.nextTick), and an
          // event read from memory (the last flush, a shared batch) needs no I/O either, so one
          // stream could otherwise go on writing for seconds while no request, health included,
          // was even read.
          if (!pending) await nextTurn()
          const next = pending ?? (await events.next())
          pending = undefined
          if (next.done) {
            controller.close()
            finish()
          } else if (next.value instanceof SseFrames) {
            controller.enqueue(next.value.bytes)
          } else {
            controller.enqueue(encoder.encode(encode(next.value)))
          }
        } catch (error) {
          finish()
          controller.error(error)
        }
      },
      cancel: finish,
    },
    { highWaterMark: 0 },
  )
  return new Response(body, {
    headers: {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache, no-transform',
      'x-accel-buffering': 'no',
    },
  })
}

/** Resolves in the check phase of the event loop, after the pending I/O of this turn was polled. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
