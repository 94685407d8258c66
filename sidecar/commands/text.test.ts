import { expect, test } from 'vitest'
import { ByteTail, commandText } from './text.ts'

const text = (s: string, cols = 20) => commandText(Buffer.from(s), cols)

test('escape sequences go, carriage returns overwrite, wraps join back', () => {
  expect(text('\x1b[31mred\x1b[0m\r\n')).toBe('red')
  expect(text('10%\r50%\r100%\r\ndone\r\n')).toBe('100%\ndone')
  expect(text('abcdef\rXY\r\n')).toBe('XYcdef')
  expect(text(`${'x'.repeat(25)}\r\n`)).toBe('x'.repeat(25))
  expect(text('a\tb')).toBe('a       b')
  expect(text('abc\b\bX')).toBe('aXc')
})

test("zsh's end-of-partial-line mark leaves the output as the screen shows it", () => {
  const cols = 20
  const mark = `\x1b[1m\x1b[7m%\x1b[27m\x1b[1m\x1b[0m${' '.repeat(cols - 1)}\r \r`
  expect(text(`foo${mark}`, cols)).toBe('foo%')
  expect(text(`foo\r\n${mark}`, cols)).toBe('foo')
})

test('ByteTail keeps the newest bytes, takes the last back, never starts mid-character', () => {
  const tail = new ByteTail(8)
  tail.add(Buffer.from('0123'))
  tail.add(Buffer.from('4567'))
  tail.add(Buffer.from('89ab'))
  tail.retract(2)
  expect(tail.total).toBe(10)
  // Whole chunks went from the front as the newest 8 came; what was taken back is not refilled.
  expect(Buffer.from(tail.bytes().bytes).toString()).toBe('456789')
  expect(tail.bytes().omitted).toBe(4)
  const wide = new ByteTail(4)
  wide.add(Buffer.from('aéé'))
  const { bytes, omitted } = wide.bytes()
  expect(Buffer.from(bytes).toString()).toBe('éé')
  expect(omitted).toBe(1)
})
