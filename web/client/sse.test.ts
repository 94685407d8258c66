/** The fetch-SSE reader shared by the page and the CLI: table-driven over the spec's cases. */
import { describe, expect, it } from 'vitest'
import { readSse, type SseMessage } from './sse.ts'

/** A body that arrives in exactly these chunks. */
function bodyOf(chunks: (string | Uint8Array)[]): ReadableStream<Uint8Array> {
  const encoder = new TextEncoder()
  return new ReadableStream<Uint8Array>({
    start(controller) {
      for (const chunk of chunks) controller.enqueue(typeof chunk === 'string' ? encoder.encode(chunk) : chunk)
      controller.close()
    },
  })
}

async function parseAll(chunks: (string | Uint8Array)[]): Promise<SseMessage[]> {
  const events: SseMessage[] = []
  for await (const event of readSse(bodyOf(chunks))) events.push(event)
  return events
}

describe('readSse', () => {
  const cases: [string, string[], SseMessage[]][] = [
    ['a named event with an id', ['event: output\nid: 7\ndata: {"a":1}\n\n'], [{ event: 'output', id: '7', data: '{"a":1}' }]],
    ['default name, multi-line data', ['data: one\ndata: two\n\n'], [{ event: 'message', data: 'one\ntwo' }]],
    ['comments (heartbeats) are ignored', [': hb\n\n: hb\ndata: x\n\n'], [{ event: 'message', data: 'x' }]],
    [
      'CRLF and lone CR line ends',
      ['event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r'],
      [
        { event: 'a', data: '1' },
        { event: 'b', data: '2' },
      ],
    ],
    [
      'a CRLF split across chunks is one line end',
      ['data: 1\r', '\n\r', '\ndata: 2\n\n'],
      [
        { event: 'message', data: '1' },
        { event: 'message', data: '2' },
      ],
    ],
    ['an event split mid-field', ['ev', 'ent: sta', 'te\nda', 'ta: {}', '\n', '\n'], [{ event: 'state', data: '{}' }]],
    ['no space after the colon', ['event:x\ndata:y\n\n'], [{ event: 'x', data: 'y' }]],
    ['an event without data is not dispatched', ['event: nothing\n\ndata: z\n\n'], [{ event: 'message', data: 'z' }]],
    [
      'the id does not leak into the next event',
      ['id: 1\ndata: a\n\ndata: b\n\n'],
      [
        { event: 'message', id: '1', data: 'a' },
        { event: 'message', data: 'b' },
      ],
    ],
  ]
  it.each(cases)('%s', async (_name, chunks, expected) => {
    expect(await parseAll(chunks)).toEqual(expected)
  })

  it('parses one large read of many events, long and short, CRLF and LF', async () => {
    const long = 'x'.repeat(20_000)
    const first = `data: ${'y'.repeat(8192 - 'data: '.length)}`
    const text = `${first}\r\n\r\nevent: big\ndata: ${long}\n\n${Array.from({ length: 500 }, (_, i) => `id: ${i}\ndata: ${i}\n\n`).join('')}`
    const events = await parseAll([text])
    expect(events).toHaveLength(502)
    expect(events[0]).toEqual({ event: 'message', data: first.slice('data: '.length) })
    expect(events[1]).toEqual({ event: 'big', data: long })
    expect(events.at(-1)).toEqual({ event: 'message', id: '499', data: '499' })
  })

  it('drops an incomplete event at the end of the body', async () => {
    const body = new Response('data: done\n\ndata: cut off').body!
    const events: SseMessage[] = []
    for await (const event of readSse(body)) events.push(event)
    expect(events).toEqual([{ event: 'message', data: 'done' }])
  })

  it('decodes UTF-8 split across network chunks', async () => {
    const bytes = new TextEncoder().encode('data: héllo ✓\n\n')
    expect(await parseAll([...bytes].map((b) => Uint8Array.of(b)))).toEqual([{ event: 'message', data: 'héllo ✓' }])
  })
})
