import { describe, expect, test } from 'vitest'
import { MarkScanner, parseMark, unescapeValue } from './marks.ts'

const STREAM =
  'hello\x1b]133;A;tk=n1\x07$ \x1b]133;B;tk=n1\x1b\\ls\r\n' +
  '\x1b[?2004l\x1b]633;E;ls -l\\x3b echo \\\\x;n1\x07\x1b]133;C;tk=n1\x07out\x1b]0;title\x07put\r\n' +
  '\x1b]133;D;2;tk=n1\x07\x1b]633;P;Cwd=/tmp/a\\x3bb;tk=n1\x07\x1b]7;file://host/tmp/a%20b\x07\x1b[?1;2004h'

function scanInPieces(text: string, cuts: number[]) {
  const bytes = Buffer.from(text, 'utf8')
  const scanner = new MarkScanner()
  const marks = []
  let at = 0
  let sequence = 0
  for (const cut of [...cuts, bytes.length]) {
    marks.push(...scanner.feed(bytes.subarray(at, cut), ++sequence))
    at = cut
  }
  return marks
}

describe('MarkScanner', () => {
  const whole = scanInPieces(STREAM, [])

  test('finds each mark with its fields', () => {
    expect(whole.map((m) => m.kind)).toEqual(['A', 'B', 'paste', 'E', 'C', 'D', 'cwd', 'cwd', 'paste'])
    expect(whole[3]).toMatchObject({ kind: 'E', commandLine: 'ls -l; echo \\x', nonce: 'n1' })
    expect(whole[5]).toMatchObject({ kind: 'D', exitCode: 2, nonce: 'n1' })
    expect(whole[6]).toMatchObject({ kind: 'cwd', cwd: '/tmp/a;b', nonce: 'n1' })
    expect(whole[7]).toMatchObject({ kind: 'cwd', cwd: '/tmp/a b' })
    expect(whole[7]!.nonce).toBeUndefined()
    expect(whole[2]!.on).toBe(false)
    expect(whole[8]!.on).toBe(true)
  })

  test('positions cover exactly the mark bytes', () => {
    const bytes = Buffer.from(STREAM)
    for (const mark of whole) {
      const text = bytes.subarray(mark.start.abs, mark.end.abs).toString()
      expect(text.startsWith('\x1b')).toBe(true)
      expect(text.endsWith('\x07') || text.endsWith('\x1b\\') || /[hl]$/.test(text)).toBe(true)
    }
  })

  test('the same marks at the same positions however the bytes are split', () => {
    const length = Buffer.byteLength(STREAM)
    for (let cut = 1; cut < length; cut++) {
      const split = scanInPieces(STREAM, [cut])
      expect(split.map((m) => ({ ...m, start: m.start.abs, end: m.end.abs }))).toEqual(
        whole.map((m) => ({ ...m, start: m.start.abs, end: m.end.abs })),
      )
    }
    // Every byte its own read.
    const single = scanInPieces(
      STREAM,
      Array.from({ length: length - 1 }, (_, i) => i + 1),
    )
    expect(single.map((m) => m.end.abs)).toEqual(whole.map((m) => m.end.abs))
  })

  test('an ESC that ends an OSC without ST also starts the next sequence', () => {
    const marks = scanInPieces('\x1b]133;A;tk=x\x1b]133;B;tk=x\x07', [13])
    expect(marks.map((m) => m.kind)).toEqual(['A', 'B'])
    expect(marks[0]!.end.abs).toBe(marks[1]!.start.abs)
  })

  test('an overlong OSC is no mark', () => {
    const marks = scanInPieces(`\x1b]633;E;${'x'.repeat(300_000)};n\x07\x1b]133;A\x07`, [100_000, 200_000])
    expect(marks.map((m) => m.kind)).toEqual(['A'])
  })
})

test('parseMark reads the kinds it knows and nothing else', () => {
  expect(parseMark('133;C')).toEqual({ kind: 'C' })
  expect(parseMark('133;D')).toEqual({ kind: 'D', exitCode: null })
  expect(parseMark('633;D;127')).toEqual({ kind: 'D', exitCode: 127 })
  expect(parseMark('633;E;echo hi')).toEqual({ kind: 'E', commandLine: 'echo hi' })
  expect(parseMark('0;a title')).toBeUndefined()
  expect(parseMark('133;Z')).toBeUndefined()
  expect(parseMark('633;P;Prompt=$')).toBeUndefined()
  expect(parseMark('7;not-a-url')).toBeUndefined()
})

test('unescapeValue undoes VS Code escaping, bytes as UTF-8', () => {
  expect(unescapeValue('a\\\\b\\x3bc\\x0ad')).toBe('a\\b;c\nd')
  expect(unescapeValue('\\xc3\\xa9t\\xc3\\xa9')).toBe('été')
  expect(unescapeValue('plain')).toBe('plain')
})
