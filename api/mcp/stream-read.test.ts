/**
 * readToBound over a real SSE byte stream (eventsource-parser, EventStream): which bound ends a
 * read, that an event past the byte limit is left for the next call, that a final event ends it
 * without waiting for the stream to close.
 */
import { describe, expect, it } from 'vitest'
import { Dispatcher } from './dispatch.ts'
import { EventStream } from './events.ts'
import { cursorValue, readToBound, shownEvent } from './stream-read.ts'

const BOUNDS = { quietMs: 1_000, timeoutMs: 10_000, maxEvents: 100, maxBytes: 1_000 }

/** A stream whose frames the test writes; `close` ends it. */
async function stream() {
  const encoder = new TextEncoder()
  let controller!: ReadableStreamDefaultController<Uint8Array>
  const body = new ReadableStream<Uint8Array>({ start: (c) => void (controller = c) })
  const call = new Dispatcher(
    () => new Response(body, { headers: { 'content-type': 'text/event-stream' } }),
    'Bearer x',
    new AbortController().signal,
  )
  const events = await EventStream.open(call, '/v1/s')
  return {
    events,
    send: (id: number, data: string, event = 'tick') => controller.enqueue(encoder.encode(`event: ${event}\nid: ${id}\ndata: ${data}\n\n`)),
    comment: () => controller.enqueue(encoder.encode(': heartbeat\n\n')),
    close: () => controller.close(),
  }
}

describe('readToBound', () => {
  it('answers quiet when nothing came for quietMs (heartbeats are not events)', async () => {
    const s = await stream()
    s.send(1, '"a"')
    s.comment()
    const outcome = await readToBound(s.events, { ...BOUNDS, quietMs: 150 })
    expect(outcome).toMatchObject({ reason: 'quiet', lastId: '1', bytes: 3 })
    expect(outcome.events.map((e) => e.data)).toEqual(['"a"'])
    s.events.close()
  })

  it('answers timeout when events keep coming past timeoutMs', async () => {
    const s = await stream()
    let id = 0
    const timer = setInterval(() => s.send(++id, '1'), 20)
    const started = Date.now()
    const outcome = await readToBound(s.events, { ...BOUNDS, timeoutMs: 300 })
    clearInterval(timer)
    expect(outcome.reason).toBe('timeout')
    expect(outcome.events.length).toBeGreaterThan(3)
    expect(Date.now() - started).toBeLessThan(900)
    s.events.close()
  })

  it('stops at maxEvents, and before an event that would pass maxBytes (a first one comes alone)', async () => {
    const s = await stream()
    for (let id = 1; id <= 5; id++) s.send(id, 'x'.repeat(40))
    expect(await readToBound(s.events, { ...BOUNDS, maxEvents: 2 })).toMatchObject({ reason: 'limit', lastId: '2', bytes: 80 })
    // 3 fits (40), 4 would make 80 > 70: it is read but left, and the cursor stays at 3.
    expect(await readToBound(s.events, { ...BOUNDS, maxBytes: 70 })).toMatchObject({ reason: 'limit', lastId: '3', bytes: 40 })
    const alone = await readToBound(s.events, { ...BOUNDS, maxBytes: 10 })
    expect(alone).toMatchObject({ reason: 'limit', lastId: '5', bytes: 40 })
    s.events.close()
  })

  it('ends at a final event without waiting for the close, and when the stream ends', async () => {
    const s = await stream()
    s.send(1, '{"k":1}')
    s.send(2, '{}', 'done')
    s.send(3, '{}')
    const outcome = await readToBound(s.events, BOUNDS, new Set(['done']))
    expect(outcome).toMatchObject({ reason: 'ended', lastId: '2' })
    expect(outcome.events.map(shownEvent)).toEqual([
      { id: 1, event: 'tick', data: { k: 1 } },
      { id: 2, event: 'done', data: {} },
    ])
    s.close()
    expect(await readToBound(s.events, BOUNDS)).toMatchObject({ reason: 'ended', lastId: '3' })
  })

  it('gives numeric cursors as numbers', () => {
    expect([cursorValue('42'), cursorValue('a-1'), cursorValue(undefined)]).toEqual([42, 'a-1', null])
  })
})
