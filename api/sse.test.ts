import { describe, expect, it } from 'vitest'
import { TermkeepError } from '../schema/errors.ts'
import { Hono } from 'hono'
import { HEARTBEAT } from '../common/sse.ts'
import { endsAtEventBoundary, headWithoutStreams, lastEventId, relaySSE, sseResponse } from './sse.ts'

const enc = (s: string) => new TextEncoder().encode(s)
const dec = new TextDecoder()

describe('lastEventId', () => {
  it.each([
    [undefined, undefined],
    ['', undefined],
    ['42', 42],
    [' 7 ', 7],
  ])('%j → %j', (header, id) => expect(lastEventId(header)).toBe(id))
  it.each(['-1', 'abc', '1.5', '1e3', '9999999999999999'])('refuses %j', (header) => {
    expect(() => lastEventId(header)).toThrow(TermkeepError)
  })
})

describe('endsAtEventBoundary', () => {
  it.each([
    ['data: x\n\n', true],
    ['data: x\r\n\r\n', true],
    ['data: x\n', false],
    ['data: x', false],
    ['\n', false],
  ])('%j → %s', (text, expected) => expect(endsAtEventBoundary(enc(text))).toBe(expected))
})

function controlled() {
  let controller!: ReadableStreamDefaultController<Uint8Array>
  let cancelled: unknown = false
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    cancel: (reason) => void (cancelled = reason ?? true),
  })
  return { body, controller, cancelled: () => cancelled }
}

describe('relaySSE', () => {
  it('passes each upstream chunk through as it arrives, heartbeats only between events, and cancels upstream', async () => {
    const upstream = controlled()
    let aborted = false
    const relayed = relaySSE(new Response(upstream.body), () => (aborted = true), { heartbeatMs: 40 })
    expect(relayed.headers.get('content-type')).toMatch(/^text\/event-stream/)
    const reader = relayed.body!.getReader()

    upstream.controller.enqueue(enc('event: data\nid: 1\ndata: {"x":'))
    expect(dec.decode((await reader.read()).value)).toBe('event: data\nid: 1\ndata: {"x":')
    // Mid-event: no heartbeat may be spliced in, however long the upstream pauses.
    await new Promise((r) => setTimeout(r, 150))
    upstream.controller.enqueue(enc('1}\n\n'))
    expect(dec.decode((await reader.read()).value)).toBe('1}\n\n')
    // Between events and idle: heartbeats.
    expect(dec.decode((await reader.read()).value)).toBe(HEARTBEAT)

    await reader.cancel()
    expect(aborted).toBe(true)
    expect(upstream.cancelled()).not.toBe(false)
  })

  it('ends when the upstream ends or breaks', async () => {
    const upstream = controlled()
    const relayed = relaySSE(new Response(upstream.body), () => {}, { heartbeatMs: 10_000 })
    upstream.controller.enqueue(enc('data: last\n\n'))
    upstream.controller.close()
    expect(await relayed.text()).toBe('data: last\n\n')

    const broken = controlled()
    const relayed2 = relaySSE(new Response(broken.body), () => {}, { heartbeatMs: 10_000 })
    broken.controller.error(new Error('sidecar went away'))
    expect(await relayed2.text()).toBe('')
  })

  it('ends with auth/invalid-token at the first heartbeat after the token is revoked', async () => {
    const upstream = controlled()
    let allowed = true
    let aborted = false
    const relayed = relaySSE(new Response(upstream.body), () => (aborted = true), { heartbeatMs: 20, stillAuthorized: async () => allowed })
    const reader = relayed.body!.getReader()
    upstream.controller.enqueue(enc('data: before\n\n'))
    expect(dec.decode((await reader.read()).value)).toBe('data: before\n\n')
    allowed = false
    let rest = ''
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += dec.decode(r.value)
    expect(
      rest.endsWith(
        'event: error\ndata: {"error":{"code":"auth/invalid-token","message":"the token was revoked or expired while the stream was open"}}\n\n',
      ),
    ).toBe(true)
    expect(aborted).toBe(true)
    expect(upstream.cancelled()).not.toBe(false)
  })

  it('tears the upstream down when the request signal aborts', async () => {
    const upstream = controlled()
    const request = new AbortController()
    let aborted = false
    relaySSE(new Response(upstream.body), () => (aborted = true), { heartbeatMs: 10_000, requestSignal: request.signal })
    request.abort()
    expect(aborted).toBe(true)
    expect(upstream.cancelled()).not.toBe(false)
  })
})

describe('sseResponse', () => {
  it('opens with a heartbeat, sends events, and turns a typed failure into one error event', async () => {
    const response = sseResponse(
      async (sink) => {
        await sink.send({ event: 'baseline', id: 3, data: { ok: true } })
        throw new TermkeepError('terminal/unavailable', 'gone')
      },
      { heartbeatMs: 10_000 },
    )
    expect(await response.text()).toBe(
      `${HEARTBEAT}event: baseline\nid: 3\ndata: {"ok":true}\n\nevent: error\ndata: {"error":{"code":"terminal/unavailable","message":"gone"}}\n\n`,
    )
  })

  it('waits while the client is slow and aborts the producer when the client cancels', async () => {
    let sent = 0
    let signal!: AbortSignal
    const response = sseResponse(
      async (sink) => {
        signal = sink.signal
        const chunk = 'x'.repeat(16 * 1024)
        while (!sink.signal.aborted) {
          await sink.send({ data: chunk })
          sent++
        }
      },
      { heartbeatMs: 10_000 },
    )
    await new Promise((r) => setTimeout(r, 50))
    // Nobody reads: the producer stops at the high-water mark instead of buffering without end.
    expect(sent).toBeLessThan(10)
    const reader = response.body!.getReader()
    await reader.read()
    await reader.cancel()
    await new Promise((r) => setTimeout(r, 10))
    expect(signal.aborted).toBe(true)
  })

  it('ends with auth/invalid-token once the re-check at a heartbeat fails', async () => {
    let allowed = true
    const response = sseResponse((sink) => new Promise<void>((resolve) => sink.signal.addEventListener('abort', () => resolve())), {
      heartbeatMs: 20,
      stillAuthorized: async () => allowed,
    })
    setTimeout(() => (allowed = false), 60)
    const text = await response.text()
    expect(text.startsWith(HEARTBEAT)).toBe(true)
    expect(
      text.endsWith(
        'event: error\ndata: {"error":{"code":"auth/invalid-token","message":"the token was revoked or expired while the stream was open"}}\n\n',
      ),
    ).toBe(true)
  })
})

describe('headWithoutStreams', () => {
  it('answers HEAD on a stream route without leaving the stream (or its upstream) open', async () => {
    const upstream = controlled()
    let aborted = false
    let producer!: AbortSignal
    const app = new Hono()
    app.use(headWithoutStreams)
    app.get('/relayed', () => relaySSE(new Response(upstream.body), () => (aborted = true), { heartbeatMs: 10_000 }))
    app.get('/produced', () =>
      sseResponse(
        (sink) => ((producer = sink.signal), new Promise<void>((resolve) => sink.signal.addEventListener('abort', () => resolve()))),
        { heartbeatMs: 10_000 },
      ),
    )
    const relayed = await app.request('/relayed', { method: 'HEAD' })
    expect([relayed.status, relayed.headers.get('content-type'), relayed.body]).toEqual([200, 'text/event-stream; charset=utf-8', null])
    expect(aborted).toBe(true)
    expect(upstream.cancelled()).not.toBe(false)
    expect((await app.request('/produced', { method: 'HEAD' })).status).toBe(200)
    expect(producer.aborted).toBe(true)
  })
})
