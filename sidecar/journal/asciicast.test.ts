/** The asciicast encoder, pure: event lines from native records, UTF-8 decoded across records. */
import { describe, expect, it } from 'vitest'
import { CastEncoder, castHeader } from './asciicast.ts'

const data = (sequence: number, ...bytes: number[]) => ({ kind: 'data' as const, sequence, bytes: Uint8Array.from(bytes) })
const utf8 = (text: string) => [...new TextEncoder().encode(text)]

describe('asciicast encoding', () => {
  it('writes the v2 header from the initial size and the start', () => {
    expect(castHeader({ cols: 120, rows: 40 }, { startedAt: 1_700_000_000_999, title: 'build', env: { TERM: 'xterm-256color' } })).toBe(
      '{"version":2,"width":120,"height":40,"timestamp":1700000000,"title":"build","env":{"TERM":"xterm-256color"}}\n',
    )
  })

  it('keeps a character split across records whole, in the event of the record that completed it', () => {
    const encoder = new CastEncoder()
    const [a, b, c, d] = utf8('😀')
    expect(encoder.record(data(1, ...utf8('x'), a, b), 1500)).toBe('[1.500,"o","x"]\n')
    expect(encoder.record(data(2, c), 1600)).toBe('') // still not a whole character
    expect(encoder.record({ kind: 'resize', sequence: 3, cols: 100, rows: 30 }, 1700)).toBe('[1.700,"r","100x30"]\n')
    expect(encoder.record(data(4, d, ...utf8('\x1b[31m!')), 1800)).toBe('[1.800,"o","😀\\u001b[31m!"]\n')
    expect(encoder.end()).toBe('')
  })

  it('turns bytes that are not UTF-8, and a character cut off at the end, into U+FFFD', () => {
    const encoder = new CastEncoder()
    expect(encoder.record(data(1, 0x61, 0xff, 0x62), 0)).toBe('[0.000,"o","a\uFFFDb"]\n')
    expect(encoder.record(data(2, 0xe2, 0x9c), 12)).toBe('')
    expect(encoder.end()).toBe('[0.012,"o","\uFFFD"]\n')
  })

  it('keeps a BOM the program printed at the start of its output (a decoder strips it by default)', () => {
    const encoder = new CastEncoder()
    expect(encoder.record(data(1, 0xef, 0xbb, 0xbf, ...utf8('BOM\r\n')), 0)).toBe('[0.000,"o","\uFEFFBOM\\r\\n"]\n')
  })
})
