import { describe, expect, it } from 'vitest'
import { RawJson, sseFrame } from './sse.ts'

describe('sseFrame', () => {
  it.each([
    [{ data: 'x' }, 'data: x\n\n'],
    [{ event: 'upsert', id: 7, data: { a: 1 } }, 'event: upsert\nid: 7\ndata: {"a":1}\n\n'],
    [{ data: 'a\nb\r\nc' }, 'data: a\ndata: b\ndata: c\n\n'],
    [{ event: 'e', data: '' }, 'event: e\ndata: \n\n'],
    [
      { event: 'output', id: 3, data: new RawJson('{"sequence":3,"data":"QQ=="}') },
      'event: output\nid: 3\ndata: {"sequence":3,"data":"QQ=="}\n\n',
    ],
    [{ comment: 'heartbeat' }, ': heartbeat\n\n'],
  ])('%j', (event, frame) => expect(sseFrame(event)).toBe(frame))

  it('refuses multi-line names and ids', () => {
    expect(() => sseFrame({ event: 'a\nb', data: '' })).toThrow()
    expect(() => sseFrame({ id: '1\n2', data: '' })).toThrow()
  })
})
