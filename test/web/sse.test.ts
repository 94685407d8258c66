/** The fetch-SSE framing core shared by the page and the CLI: table-driven over the spec's cases. */
import { describe, expect, it } from 'vitest'
import { readSse, SseParser, type SseEvent } from '../../web/client/sse.ts'

function parseAll(chunks: string[]): SseEvent[] {
  const parser = new SseParser()
  return chunks.flatMap((chunk) => parser.feed(chunk))
}

describe('SseParser', () => {
  const cases: [string, string[], SseEvent[]][] = [
    ['a named event with an id', ['event: output\nid: 7\ndata: {"a":1}\n\n'], [{ event: 'output', id: '7', data: '{"a":1}' }]],
    ['default name, multi-line data', ['data: one\ndata: two\n\n'], [{ event: 'message', data: 'one\ntwo' }]],
    ['comments (heartbeats) are ignored', [': hb\n\n: hb\ndata: x\n\n'], [{ event: 'message', data: 'x' }]],
    ['CRLF and lone CR line ends', ['event: a\r\ndata: 1\r\n\r\nevent: b\rdata: 2\r\r'], [{ event: 'a', data: '1' }, { event: 'b', data: '2' }]],
    ['a CRLF split across chunks is one line end', ['data: 1\r', '\n\r', '\ndata: 2\n\n'], [{ event: 'message', data: '1' }, { event: 'message', data: '2' }]],
    ['an event split mid-field', ['ev', 'ent: sta', 'te\nda', 'ta: {}', '\n', '\n'], [{ event: 'state', data: '{}' }]],
    ['no space after the colon', ['event:x\ndata:y\n\n'], [{ event: 'x', data: 'y' }]],
    ['an event without data is not dispatched', ['event: nothing\n\ndata: z\n\n'], [{ event: 'message', data: 'z' }]],
    ['the id does not leak into the next event', ['id: 1\ndata: a\n\ndata: b\n\n'], [{ event: 'message', id: '1', data: 'a' }, { event: 'message', data: 'b' }]],
  ]
  it.each(cases)('%s', (_name, chunks, expected) => {
    expect(parseAll(chunks)).toEqual(expected)
  })

  it('drops an incomplete event at the end of the body', async () => {
    const body = new Response('data: done\n\ndata: cut off').body!
    const events: SseEvent[] = []
    for await (const event of readSse(body)) events.push(event)
    expect(events).toEqual([{ event: 'message', data: 'done' }])
  })

  it('decodes UTF-8 split across network chunks', async () => {
    const bytes = new TextEncoder().encode('data: héllo ✓\n\n')
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const b of bytes) controller.enqueue(Uint8Array.of(b))
        controller.close()
      },
    })
    const events: SseEvent[] = []
    for await (const event of readSse(body)) events.push(event)
    expect(events).toEqual([{ event: 'message', data: 'héllo ✓' }])
  })
})
