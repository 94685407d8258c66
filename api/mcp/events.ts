/**
 * Reading one of the API's SSE streams inside a tool call: events as they arrive (parsed by
 * eventsource-parser), each wait bounded by a deadline without losing the event that arrives
 * after it, and an `error` event turned back into the TermkeepError it carries.
 */
import { EventSourceParserStream } from 'eventsource-parser/stream'
import { errorFromBody, TermkeepError } from '../../schema/errors.ts'
import type { Dispatcher, RouteCall } from './dispatch.ts'

export interface StreamEvent {
  event: string
  id?: string
  data: string
}

/** Ended: the stream finished; timeout: nothing arrived before the deadline. */
export type NextEvent = StreamEvent | 'ended' | 'timeout'

interface Parsed {
  event?: string
  id?: string
  data: string
}

export class EventStream {
  readonly #abort: AbortController
  readonly #reader: ReadableStreamDefaultReader<Parsed>
  /** A read that outlived its deadline: the next call takes its event. */
  #pending: Promise<ReadableStreamReadResult<Parsed>> | undefined

  private constructor(response: Response, abort: AbortController) {
    this.#abort = abort
    const body = response.body ?? new ReadableStream<Uint8Array>({ start: (c) => c.close() })
    const text = body.pipeThrough(new TextDecoderStream() as unknown as TransformStream<Uint8Array, string>)
    this.#reader = text.pipeThrough(new EventSourceParserStream()).getReader()
  }

  /** Opens a stream route; it ends with `close()` or the call's signal. */
  static async open(call: Dispatcher, template: string, request: RouteCall = {}): Promise<EventStream> {
    const abort = new AbortController()
    const signal = AbortSignal.any([call.signal, abort.signal])
    const headers = { accept: 'text/event-stream', ...request.headers }
    const response = await call.open('GET', template, { ...request, headers }, signal)
    return new EventStream(response, abort)
  }

  /** The next event, or why there is none, waiting at most `timeoutMs` (Infinity: until one). */
  async next(timeoutMs = Infinity): Promise<NextEvent> {
    const read = (this.#pending ??= this.#reader.read())
    let timer: ReturnType<typeof setTimeout> | undefined
    const deadline =
      timeoutMs === Infinity
        ? undefined
        : new Promise<'timeout'>((resolve) => (timer = setTimeout(() => resolve('timeout'), Math.max(0, timeoutMs))))
    try {
      const result = await (deadline ? Promise.race([read, deadline]) : read)
      if (result === 'timeout') return 'timeout'
      this.#pending = undefined
      if (result.done) return 'ended'
      const { event = 'message', id, data } = result.value
      if (event === 'error') throw errorFromBody(safeJson(data)) ?? new TermkeepError('internal/error', 'the stream failed')
      return { event, id, data }
    } catch (error) {
      this.#pending = undefined
      // Torn down by its own signal (the call ended or was cancelled): nothing more comes.
      if (this.#abort.signal.aborted || isAbort(error)) return 'ended'
      throw error
    } finally {
      clearTimeout(timer)
    }
  }

  close(): void {
    this.#abort.abort()
    void this.#reader.cancel().catch(() => {})
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

function isAbort(error: unknown): boolean {
  return error instanceof Error && (error.name === 'AbortError' || error.name === 'TimeoutError')
}
