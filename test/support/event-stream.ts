/**
 * An SSE response read in the background: every event kept in order, `until` waits for one that
 * matches. For streams a test watches across several steps (the hosts watch).
 */
import { createParser } from 'eventsource-parser'
import { waitFor } from './ports.ts'

export interface StreamEvent {
  event: string
  data: any
}

export class EventStream {
  readonly events: StreamEvent[] = []
  readonly #reader: ReadableStreamDefaultReader<Uint8Array>
  readonly done: Promise<void>

  constructor(response: Response) {
    const reader = response.body!.getReader()
    this.#reader = reader
    const parser = createParser({
      onEvent: ({ event, data }) => this.events.push({ event: event ?? 'message', data: JSON.parse(data) }),
    })
    const decoder = new TextDecoder()
    this.done = (async () => {
      for (;;) {
        const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }))
        if (done) return
        parser.feed(decoder.decode(value, { stream: true }))
      }
    })()
  }

  /** The first event after `from` (an index into `events`) that matches. */
  async until(match: (event: StreamEvent) => boolean, from = 0, timeoutMs = 15_000, what = 'an event'): Promise<StreamEvent> {
    await waitFor(async () => this.events.slice(from).some(match), timeoutMs, what)
    return this.events.slice(from).find(match)!
  }

  async close(): Promise<void> {
    await this.#reader.cancel().catch(() => {})
    await this.done
  }
}
