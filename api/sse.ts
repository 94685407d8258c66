/**
 * Server-sent events for every API stream, Web streams only. Two shapes:
 *
 * - `sseResponse(c, run)`: the API produces the events itself (registry watch, readDisplay, …).
 *   `run` gets a sink whose `send` waits while the client is slow (backpressure), and whose
 *   `signal` aborts when the client goes away. Refuse a request (404, 410, …) *before* calling
 *   this: once the stream starts the status is 200, and a later TermkeepError becomes one
 *   `error` event that ends the stream.
 * - `relaySSE(upstream)`: a stream the sidecar produces, passed through chunk by chunk as it
 *   arrives (never buffered whole); cancelling the client's stream cancels the upstream request.
 *
 * Both add a comment heartbeat every SSE_HEARTBEAT_MS, and only between events.
 */
import { TermkeepError } from '../schema/errors.ts'
import { SSE_HEARTBEAT_MS } from '../schema/limits.ts'
import { isDatabaseUnavailable } from './errors.ts'

export interface SseEvent {
  event?: string
  /** The resume cursor a client sends back as Last-Event-ID. */
  id?: string | number
  /** Sent as is when a string, else as JSON. */
  data: unknown
}

export const HEARTBEAT = ': heartbeat\n\n'

export const SSE_HEADERS: Record<string, string> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
}

/** Pure: the wire form of one event (multi-line data becomes several `data:` lines). */
export function sseFrame({ event, id, data }: SseEvent): string {
  for (const field of [event, id]) {
    if (field !== undefined && /[\r\n]/.test(String(field))) throw new Error('SSE event names and ids are single-line')
  }
  const text = typeof data === 'string' ? data : JSON.stringify(data)
  let frame = event ? `event: ${event}\n` : ''
  if (id !== undefined) frame += `id: ${id}\n`
  for (const line of text.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`
  return `${frame}\n`
}

/** Pure: a Last-Event-ID header as a non-negative integer cursor; undefined when absent. */
export function lastEventId(header: string | undefined): number | undefined {
  if (header === undefined || header.trim() === '') return undefined
  if (!/^\d{1,15}$/.test(header.trim())) {
    throw new TermkeepError('request/invalid', 'Last-Event-ID must be a non-negative integer event id')
  }
  return Number(header.trim())
}

export interface SseSink {
  send(event: SseEvent): Promise<void>
  /** Aborted when the client disconnected (or the stream ended). */
  readonly signal: AbortSignal
}

export interface SseOptions {
  heartbeatMs?: number
  /** The incoming request's signal, if the runtime aborts it on disconnect. */
  requestSignal?: AbortSignal
  /**
   * Asked at every heartbeat; false ends the stream (a token revoked or expired while it was
   * open). Use `streamOptions(c)` from auth/guard.ts, which fills all three.
   */
  stillAuthorized?: () => Promise<boolean>
}

/** Runs the authorization re-check; a failing check (database away) keeps the stream. */
async function revoked(options: SseOptions): Promise<boolean> {
  if (!options.stillAuthorized) return false
  return !(await options.stillAuthorized().catch(() => true))
}

const REVOKED = new TermkeepError('auth/invalid-token', 'the token was revoked or expired while the stream was open')

const encoder = new TextEncoder()

export function sseResponse(run: (sink: SseSink) => Promise<void>, options: SseOptions = {}): Response {
  const done = new AbortController()
  const signal = options.requestSignal ? AbortSignal.any([done.signal, options.requestSignal]) : done.signal
  let controller!: ReadableStreamDefaultController<Uint8Array>
  let wake: (() => void) | undefined
  let lastWrite = Date.now()
  const push = (text: string) => {
    if (signal.aborted) return
    controller.enqueue(encoder.encode(text))
    lastWrite = Date.now()
  }
  const finish = () => {
    clearInterval(heartbeat)
    done.abort()
    wake?.()
  }
  const stream = new ReadableStream<Uint8Array>(
    {
      start(c) {
        controller = c
      },
      pull() {
        wake?.()
      },
      cancel() {
        finish()
      },
    },
    new ByteLengthQueuingStrategy({ highWaterMark: 64 * 1024 }),
  )
  const every = options.heartbeatMs ?? SSE_HEARTBEAT_MS
  const heartbeat = setInterval(() => {
    void revoked(options).then((gone) => {
      if (gone) {
        push(sseFrame({ event: 'error', data: REVOKED.toBody() }))
        if (!signal.aborted) controller.close()
        finish()
      } else if (Date.now() - lastWrite >= every / 2) push(HEARTBEAT)
    })
  }, every)
  signal.addEventListener('abort', () => wake?.(), { once: true })
  const sink: SseSink = {
    signal,
    async send(event) {
      push(sseFrame(event))
      while (!signal.aborted && (controller.desiredSize ?? 1) <= 0) {
        await new Promise<void>((resolve) => (wake = resolve))
        wake = undefined
      }
    },
  }
  // The first bytes go out at once so clients (and proxies) see the stream open.
  push(HEARTBEAT)
  void run(sink)
    .catch((error: unknown) => {
      if (signal.aborted) return
      const known =
        error instanceof TermkeepError
          ? error
          : isDatabaseUnavailable(error)
            ? new TermkeepError('database/unavailable', 'the database stopped answering')
            : new TermkeepError('internal/error', 'internal error')
      if (known.code === 'internal/error') console.error('termkeep api: stream failed', error)
      push(sseFrame({ event: 'error', data: known.toBody() }))
    })
    .finally(() => {
      const open = !signal.aborted
      finish()
      if (open) controller.close()
    })
    .catch(() => {})
  return new Response(stream, { status: 200, headers: SSE_HEADERS })
}

/** Pure: does this chunk end exactly between two events? */
export function endsAtEventBoundary(chunk: Uint8Array): boolean {
  const n = chunk.length
  return n >= 2 && chunk[n - 1] === 10 && (chunk[n - 2] === 10 || (n >= 4 && chunk[n - 2] === 13 && chunk[n - 3] === 10))
}

/**
 * Passes an upstream SSE response through. `abortUpstream` is called when the client cancels,
 * so the request to the sidecar is torn down too.
 */
export function relaySSE(upstream: Response, abortUpstream: () => void, options: SseOptions = {}): Response {
  const body = upstream.body
  if (!body) return new Response('', { status: 200, headers: SSE_HEADERS })
  const reader = body.getReader()
  let atBoundary = true
  let lastWrite = Date.now()
  let closed = false
  const every = options.heartbeatMs ?? SSE_HEARTBEAT_MS
  let heartbeat: ReturnType<typeof setInterval> | undefined
  const stop = () => {
    closed = true
    clearInterval(heartbeat)
  }
  const stream = new ReadableStream<Uint8Array>(
    {
      start(controller) {
        heartbeat = setInterval(() => {
          void revoked(options).then((gone) => {
            if (closed) return
            if (gone) {
              stop()
              abortUpstream()
              void reader.cancel().catch(() => {})
              // Only between events can an error event be appended cleanly.
              if (atBoundary) controller.enqueue(encoder.encode(sseFrame({ event: 'error', data: REVOKED.toBody() })))
              controller.close()
              return
            }
            if (!atBoundary || Date.now() - lastWrite < every / 2) return
            controller.enqueue(encoder.encode(HEARTBEAT))
            lastWrite = Date.now()
          })
        }, every)
      },
      async pull(controller) {
        try {
          const { done, value } = await reader.read()
          if (closed) return
          if (done) {
            stop()
            controller.close()
            return
          }
          controller.enqueue(value)
          atBoundary = endsAtEventBoundary(value)
          lastWrite = Date.now()
        } catch {
          // The upstream broke off (sidecar stopped): end the relayed stream cleanly.
          if (!closed) {
            stop()
            controller.close()
          }
        }
      },
      cancel(reason) {
        stop()
        abortUpstream()
        void reader.cancel(reason).catch(() => {})
      },
    },
    { highWaterMark: 0 },
  )
  options.requestSignal?.addEventListener('abort', () => {
    if (closed) return
    stop()
    abortUpstream()
    void reader.cancel().catch(() => {})
  })
  return new Response(stream, { status: 200, headers: SSE_HEADERS })
}
