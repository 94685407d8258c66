/** Titles: graphemes counted as a reader counts them, long texts refused by their length first. */
import * as v from 'valibot'
import { describe, expect, it } from 'vitest'
import { MAX_UTF16_UNITS_PER_GRAPHEME } from '../limits.ts'
import { titleSchema, withinGraphemes } from './common.ts'

describe('withinGraphemes', () => {
  it.each([
    ['abc', 3, true],
    ['abcd', 3, false],
    ['👨‍👩‍👧‍👦👍🏽', 2, true],
    ['👨‍👩‍👧‍👦👍🏽x', 2, false],
    [`e${'\u0301'.repeat(MAX_UTF16_UNITS_PER_GRAPHEME - 1)}`, 1, true],
    [`e${'\u0301'.repeat(MAX_UTF16_UNITS_PER_GRAPHEME)}`, 1, false],
    ['', 0, true],
  ])('%j within %i: %s', (text, max, within) => {
    expect(withinGraphemes(text, max)).toBe(within)
  })

  it('answers for a long text without counting it', () => {
    const started = performance.now()
    expect(withinGraphemes('a'.repeat(5_000_000), 200)).toBe(false)
    expect(withinGraphemes('a'.repeat(200 * MAX_UTF16_UNITS_PER_GRAPHEME), 200)).toBe(false)
    // A generous bound: counting 5,000,000 characters would take hours, these take microseconds.
    expect(performance.now() - started).toBeLessThan(1_000)
  })
})

describe('titleSchema', () => {
  const schema = titleSchema(5, 'titles')
  it.each([
    ['  hello  ', 'hello'],
    ['😀😀😀😀😀', '😀😀😀😀😀'],
    ['e\u0301', 'é'],
  ])('accepts %j as %j', (input, output) => {
    expect(v.parse(schema, input)).toBe(output)
  })

  it.each([
    ['abcdef', 'titles are at most 5 characters'],
    ['a'.repeat(1_000_000), 'titles are at most 5 characters'],
    ['a\u0007', 'titles cannot contain control characters'],
    ['\u200b', 'titles need at least one visible character'],
    ['\ud800', 'titles must be valid Unicode (a lone surrogate is not)'],
  ])('refuses %j', (input, message) => {
    const result = v.safeParse(schema, input)
    expect(result.success).toBe(false)
    expect(result.issues?.map((i) => i.message)).toContain(message)
  })
})
