/** The alternate-screen filter of `termkeep attach`: table-driven, over whole and split chunks. */
import { describe, expect, it } from 'vitest'
import { AltScreenFilter, type Piece } from '../../cli/alt-screen.ts'

const text = (bytes: Uint8Array) => Buffer.from(bytes).toString('latin1')
const show = (pieces: Piece[]) => pieces.map((p) => ({ raw: text(p.raw), local: text(p.local), switched: p.switched }))

/** Everything the filter gives for `chunks`, pieces joined: what reached each side, and the switches. */
function run(chunks: string[]) {
  const filter = new AltScreenFilter()
  const pieces = chunks.flatMap((chunk) => filter.push(Buffer.from(chunk, 'latin1')))
  return {
    raw: pieces.map((p) => text(p.raw)).join(''),
    local: pieces.map((p) => text(p.local)).join(''),
    switches: pieces.flatMap((p) => (p.switched ? [p.switched] : [])),
  }
}

describe('AltScreenFilter', () => {
  const cases: [string, string, string, string[]][] = [
    ['plain text passes', 'hello \x1b[31mred\x1b[0m', 'hello \x1b[31mred\x1b[0m', []],
    ['1049 enter', 'a\x1b[?1049hb', 'ab', ['enter']],
    ['1049 leave', 'a\x1b[?1049lb', 'ab', ['leave']],
    ['47 and 1047', '\x1b[?47h\x1b[?1047l', '', ['enter', 'leave']],
    ['other modes in the same sequence are kept', '\x1b[?1;1049;2004h', '\x1b[?1;2004h', ['enter']],
    ['a mode that only looks alike is kept', '\x1b[?10490h\x1b[?104l\x1b[1049h', '\x1b[?10490h\x1b[?104l\x1b[1049h', []],
    ['other private modes pass', '\x1b[?25l\x1b[?2004h', '\x1b[?25l\x1b[?2004h', []],
  ]
  it.each(cases)('%s', (_name, input, local, switches) => {
    const result = run([input])
    expect(result.local).toBe(local)
    expect(result.raw).toBe(input)
    expect(result.switches).toEqual(switches)
  })

  it('recognises a switch split at every possible chunk boundary', () => {
    const input = 'less\x1b[?1049;1hPAGE\x1b[?1l\x1b[?1049lprompt$ '
    for (let a = 0; a <= input.length; a++) {
      for (let b = a; b <= input.length; b++) {
        const result = run([input.slice(0, a), input.slice(a, b), input.slice(b)])
        expect(result.local, `split at ${a}, ${b}`).toBe('less\x1b[?1hPAGE\x1b[?1lprompt$ ')
        expect(result.raw).toBe(input)
        expect(result.switches).toEqual(['enter', 'leave'])
      }
    }
  })

  it('ends a piece right after each switch, so the caller acts at that point', () => {
    const filter = new AltScreenFilter()
    expect(show(filter.push(Buffer.from('x\x1b[?1049hy\x1b[?1049lz', 'latin1')))).toEqual([
      { raw: 'x\x1b[?1049h', local: 'x', switched: 'enter' },
      { raw: 'y\x1b[?1049l', local: 'y', switched: 'leave' },
      { raw: 'z', local: 'z', switched: undefined },
    ])
  })

  it('keeps an incomplete sequence for the next chunk, but not forever-long garbage', () => {
    const filter = new AltScreenFilter()
    expect(show(filter.push(Buffer.from('ab\x1b[?10', 'latin1')))).toEqual([{ raw: 'ab', local: 'ab', switched: undefined }])
    const long = `\x1b[?${'1;'.repeat(40)}`
    expect(text(filter.push(Buffer.from(long, 'latin1'))[0].local)).toBe(`\x1b[?10${long}`)
  })

  it('passes UTF-8 text through unchanged', () => {
    const bytes = new TextEncoder().encode('héllo ✓ \x1b[?1049h日本')
    const out = new AltScreenFilter().push(bytes)
    expect(new TextDecoder().decode(Buffer.concat(out.map((p) => p.local)))).toBe('héllo ✓ 日本')
  })
})
