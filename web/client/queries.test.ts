/** Query stripping for replayed bytes (termkeep attach): queries go, everything else stays byte-exact. */
import { describe, expect, it } from 'vitest'
import { stripQueries } from './queries.ts'

const enc = (s: string) => new TextEncoder().encode(s)
const dec = (b: Uint8Array) => new TextDecoder().decode(b)

describe('stripQueries', () => {
  it.each([
    ['DA1', 'a\x1b[cb', 'ab'],
    ['DA1 with 0', 'a\x1b[0cb', 'ab'],
    ['DA2', 'a\x1b[>cb', 'ab'],
    ['CPR', 'a\x1b[6nb', 'ab'],
    ['DSR', 'a\x1b[5nb', 'ab'],
    ['DECRQM', 'a\x1b[?2004$pb', 'ab'],
    ['XTVERSION', 'a\x1b[>0qb', 'ab'],
    ['window size report', 'a\x1b[18tb', 'ab'],
    ['DECRQSS', 'a\x1bP$qm\x1b\\b', 'ab'],
    ['colour query', 'a\x1b]11;?\x07b', 'ab'],
    ['palette query', 'a\x1b]4;1;?\x1b\\b', 'ab'],
  ])('removes %s', (_name, input, output) => {
    expect(dec(stripQueries(enc(input)))).toBe(output)
  })

  it.each([
    ['colours and cursor moves', '\x1b[31mred\x1b[0m\x1b[2;5H\x1b[?25l'],
    ['a palette change', '\x1b]4;1;rgb:12/34/56\x07'],
    ['a title', '\x1b]2;vim\x07'],
    ['window resize request (not a report)', '\x1b[8;24;80t'],
    ['UTF-8 text', 'héllo ✓ 世界'],
  ])('keeps %s byte-exact', (_name, input) => {
    const bytes = enc(input)
    expect(stripQueries(bytes)).toEqual(bytes)
  })
})
