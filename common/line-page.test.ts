/** The page rules, table-driven on in-memory bytes (the sidecar streams the same pager from disk). */
import { describe, expect, it } from 'vitest'
import { TermkeepError } from '../schema/errors.ts'
import { LinePager, pageOfBytes } from './line-page.ts'

const bytes = (s: string) => new TextEncoder().encode(s)

function codeOf(run: () => unknown): string | undefined {
  try {
    run()
  } catch (error) {
    if (error instanceof TermkeepError) return error.code
    throw error
  }
  return undefined
}

describe('pageOfBytes', () => {
  it.each([
    // input, offset, limit → text, lines, eof
    ['a\nb\nc', 1, 2, 'a\nb', 2, false],
    ['a\nb\nc', 3, 2, 'c', 1, true],
    ['a\nb\nc\n', 3, 5, 'c', 1, true],
    ['a\nb\n', 1, 2, 'a\nb', 2, true], // a final newline does not start a line
    ['a\nb\n', 3, 2, '', 0, true], // past the last line
    ['a\nb\n', 99, 2, '', 0, true],
    ['', 1, 5, '', 0, true], // empty file
    ['\n', 1, 5, '', 1, true], // one empty line
    ['a\n\n', 1, 5, 'a\n', 2, true], // a trailing empty line counts
    ['no final newline', 1, 5, 'no final newline', 1, true],
    ['a\r\nb\r\n', 1, 5, 'a\nb', 2, true], // CRLF reads like LF
    ['a\r\nb', 1, 5, 'a\nb', 1 + 1, true],
    ['lone\rcr', 1, 5, 'lone\rcr', 1, true], // a lone CR is content
    ['x\r', 1, 1, 'x\r', 1, true], // ... also at EOF without LF
    ['é\n€\n𝄞', 2, 2, '€\n𝄞', 2, true],
  ] as const)('%j offset %i limit %i', (input, offset, limit, text, lines, eof) => {
    const page = pageOfBytes(bytes(input), offset, limit, 1024)
    expect(page).toMatchObject({ text, lines, eof, offset })
  })

  it('accepts a page of exactly maxBytes and refuses one byte more, never cutting it', () => {
    expect(pageOfBytes(bytes('0123456789'), 1, 1, 10).text).toBe('0123456789')
    expect(pageOfBytes(bytes('0123456789\r\n'), 1, 1, 10).text).toBe('0123456789') // the CR is terminator
    expect(pageOfBytes(bytes('01234\n5678\nmore'), 1, 2, 10).text).toBe('01234\n5678') // separator counts
    expect(codeOf(() => pageOfBytes(bytes('0123456789A'), 1, 1, 10))).toBe('files/too-large')
    expect(codeOf(() => pageOfBytes(bytes('01234\n56789\n'), 1, 2, 10))).toBe('files/too-large')
    const refusal = (() => {
      try {
        pageOfBytes(bytes('012\n345\n678\n9AB\n'), 1, 4, 10)
      } catch (error) {
        return error as TermkeepError
      }
    })()
    expect(refusal?.details).toEqual({ limit: 10, fittingLines: 2 }) // '012\n345' fits, a third line would not
    // The oversized line is not on this page: fine.
    expect(pageOfBytes(bytes('ok\n0123456789ABCDEF'), 1, 1, 10)).toMatchObject({ text: 'ok', eof: false })
  })

  it('refuses NUL and invalid UTF-8 on the page only', () => {
    expect(codeOf(() => pageOfBytes(bytes('a\0b'), 1, 5, 100))).toBe('files/not-text')
    expect(codeOf(() => pageOfBytes(Uint8Array.of(0x61, 0x0a, 0xff, 0xfe), 1, 5, 100))).toBe('files/not-text')
    expect(codeOf(() => pageOfBytes(Uint8Array.of(0xe2, 0x82), 1, 5, 100))).toBe('files/not-text') // truncated sequence
    expect(pageOfBytes(Uint8Array.of(0xff, 0x00, 0x0a, 0x62), 2, 5, 100).text).toBe('b')
  })

  it('gives the same page however the input is chunked', () => {
    const input = bytes('alpha\r\nbeta\n\ngamma é\r\ndelta\nepsilon')
    const whole = pageOfBytes(input, 2, 3, 100)
    for (let size = 1; size <= 7; size++) {
      const pager = new LinePager(2, 3, 100)
      for (let at = 0; at < input.length; at += size) if (!pager.push(input.subarray(at, at + size))) break
      expect(pager.finish()).toEqual(whole)
    }
    expect(whole).toMatchObject({ text: 'beta\n\ngamma é', lines: 3, eof: false })
  })

  it('refuses a skipped line longer than maxSkippedLineBytes, exactly, however the input is chunked', () => {
    const input = bytes('a\n0123456789\nz')
    const outcome = (max: number, size: number, resume?: { line: number; byte: number }) => {
      const pager = new LinePager(3, 5, 100, resume?.line, resume?.byte, max)
      try {
        for (let at = resume?.byte ?? 0; at < input.length; at += size)
          if (!pager.push(input.subarray(at, Math.min(at + size, input.length)))) break
        return pager.finish().text
      } catch (error) {
        return (error as TermkeepError).details
      }
    }
    for (let size = 1; size <= input.length; size++) {
      expect(outcome(10, size)).toBe('z') // line 2 is exactly 10 bytes
      expect(outcome(9, size)).toEqual({ limit: 9, line: 2, byte: 2 })
      expect(outcome(9, size, { line: 2, byte: 2 })).toEqual({ limit: 9, line: 2, byte: 2 })
    }
    // Lines on the page have their own bound (maxBytes), not this one.
    expect(new LinePager(1, 5, 100, 1, 0, 1).push(input)).toBe(true)
  })

  it('resumes from a cursor byte exactly like a fresh scan', () => {
    const input = bytes(Array.from({ length: 50 }, (_, i) => `line ${i + 1}`).join('\r\n'))
    let page = pageOfBytes(input, 1, 7, 1000)
    const seen = [page.text]
    while (!page.eof) {
      const offset = page.offset + page.lines
      const resumed = pageOfBytes(input, offset, 7, 1000, { line: offset, byte: page.nextByte })
      expect(resumed).toEqual(pageOfBytes(input, offset, 7, 1000))
      page = resumed
      seen.push(page.text)
    }
    expect(seen.join('\n').split('\n')).toHaveLength(50)
  })
})
