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
import type { MiddlewareHandler } from 'hono'
import { TermkeepError } from '../schema/errors.ts'
import { SSE_HEARTBEAT_MS } from '../schema/limits.ts'
import { isDatabaseUnavailable } from '../storage/unavailable.ts'
import { HEARTBEAT, SSE_HEADERS, sseFrame, type SseEvent } from '../common/sse.ts'
import { hopMark } from '../common/hop-trace.ts'

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
   * open). Stream routes get all three from `openStream(c, …)` in auth/guard.ts.
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

/** Where a relayed stream's bytes go: a web stream (every runtime) or a Node response (runtime/node.ts). */
export interface RelaySink {
  /** `written`, when given, is called once the chunk's bytes are no longer needed. */
  write(chunk: Uint8Array, written?: () => void): void
  close(): void
}

/**
 * One relayed stream's bookkeeping, whatever carries its bytes: heartbeats only between events,
 * the token re-check at each heartbeat, and tearing the upstream down when the client goes away.
 * The carrier calls `start` once, then `chunk` per upstream chunk and `end` when the upstream
 * ends or breaks off; `cancel` when the client goes away.
 */
export class SseRelay {
  readonly upstream: Response
  readonly #abortUpstream: () => void
  readonly #options: SseOptions
  #sink: RelaySink | undefined
  #cancelBody: () => void = () => void this.upstream.body?.cancel().catch(() => {})
  #atBoundary = true
  #lastWrite = Date.now()
  #closed = false
  #heartbeat: ReturnType<typeof setInterval> | undefined

  constructor(upstream: Response, abortUpstream: () => void, options: SseOptions) {
    this.upstream = upstream
    this.#abortUpstream = abortUpstream
    this.#options = options
    // The client may be gone already (it left while the sidecar was answering).
    if (options.requestSignal?.aborted) this.cancel()
    else options.requestSignal?.addEventListener('abort', () => this.cancel(), { once: true })
  }

  /** Ended or cancelled: nothing more is delivered. */
  get closed(): boolean {
    return this.#closed
  }

  /** Starts delivering to `sink`; `cancelBody` stops reading the upstream body. A relay cancelled
   * before it started only closes the sink. */
  start(sink: RelaySink, cancelBody: () => void): void {
    if (this.#sink) return
    if (this.#closed) return sink.close()
    this.#sink = sink
    this.#cancelBody = cancelBody
    const every = this.#options.heartbeatMs ?? SSE_HEARTBEAT_MS
    this.#heartbeat = setInterval(() => void this.#beat(every), every)
  }

  chunk(value: Uint8Array, written?: () => void): void {
    if (this.#closed) return written?.()
    hopMark('API: relay chunk → client')
    this.#sink!.write(value, written)
    this.#atBoundary = endsAtEventBoundary(value)
    this.#lastWrite = Date.now()
  }

  /** The upstream ended, or broke off (sidecar stopped): end the client's stream cleanly. */
  end(): void {
    if (this.#stop()) this.#sink?.close()
  }

  /** The client went away: tear the upstream down. */
  cancel(): void {
    if (!this.#stop()) return
    this.#abortUpstream()
    this.#cancelBody()
  }

  /** Marks the relay closed; false when it already was. */
  #stop(): boolean {
    if (this.#closed) return false
    this.#closed = true
    clearInterval(this.#heartbeat)
    return true
  }

  async #beat(every: number): Promise<void> {
    const gone = await revoked(this.#options)
    if (this.#closed) return
    const sink = this.#sink!
    if (gone) {
      // Only between events can an error event be appended cleanly.
      const atBoundary = this.#atBoundary
      this.cancel()
      if (atBoundary) sink.write(encoder.encode(sseFrame({ event: 'error', data: REVOKED.toBody() })))
      sink.close()
      return
    }
    if (!this.#atBoundary || Date.now() - this.#lastWrite < every / 2) return
    sink.write(encoder.encode(HEARTBEAT))
    this.#lastWrite = Date.now()
  }
}

/**
 * Middleware: Hono answers HEAD from the GET route's response without its body, and never reads or
 * cancels that body; a stream (a relayed sidecar stream, a registry watch) would stay open behind
 * it until its source ended. Cancel it. (Stream routes never open one for HEAD: `openStream` in
 * auth/guard.ts answers first, since opening may act, e.g. a follow takes input control.)
 */
export const headWithoutStreams: MiddlewareHandler = async (c, next) => {
  await next()
  if (c.req.method === 'HEAD') await c.res.body?.cancel().catch(() => {})
}

const relays = new WeakMap<Response, SseRelay>()

/**
 * The relay behind a response made by relaySSE, for a runtime that can carry its bytes more
 * cheaply than a web stream (runtime/node.ts); it then starts the relay itself and never reads
 * the response's body.
 */
export function relayOf(response: Response): SseRelay | undefined {
  return relays.get(response)
}

/**
 * Passes an upstream SSE response through. `abortUpstream` is called when the client cancels,
 * so the request to the sidecar is torn down too. Nothing is read before the response's body is.
 */
export function relaySSE(upstream: Response, abortUpstream: () => void, options: SseOptions = {}): Response {
  const body = upstream.body
  if (!body) return new Response('', { status: 200, headers: SSE_HEADERS })
  const relay = new SseRelay(upstream, abortUpstream, options)
  let reader: ReadableStreamDefaultReader<Uint8Array> | undefined
  const stream = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        // Cancelled before it started (the client left while the sidecar was answering).
        if (relay.closed) return controller.close()
        if (!reader) {
          const started = body.getReader()
          reader = started
          relay.start(
            { write: (chunk) => controller.enqueue(chunk), close: () => controller.close() },
            () => void started.cancel().catch(() => {}),
          )
        }
        try {
          const { done, value } = await reader.read()
          if (done) relay.end()
          else relay.chunk(value)
        } catch {
          relay.end()
        }
      },
      cancel() {
        relay.cancel()
      },
    },
    { highWaterMark: 0 },
  )
  const response = new Response(stream, { status: 200, headers: SSE_HEADERS })
  relays.set(response, relay)
  return response
}
