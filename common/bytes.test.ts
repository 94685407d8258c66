/** Resource content from wire text: sizes from the text alone, slice-wise conversion exact across
 * slice boundaries, typed refusals. */
import { describe, expect, it } from 'vitest'
import { TermkeepError } from '../schema/errors.ts'
import { CONTENT_SLICE_SIZE } from './bytes.ts'
import { base64DecodedLength, decodeBase64, encodeUtf8, fromBase64, fromBase64url, toBase64, toBase64url } from './bytes.ts'

async function codeOf(run: () => unknown): Promise<string> {
  try {
    await run()
  } catch (error) {
    if (error instanceof TermkeepError) return error.code
    throw error
  }
  return 'accepted'
}

describe('base64DecodedLength', () => {
  it.each([
    ['', 0],
    ['QQ', 1],
    ['QUI', 2],
    ['QUJD', 3],
    ['QQ==', 1],
    ['QUI=', 2],
    ['QUJDRA', 4],
  ])('%j decodes to %i bytes', (text, bytes) => {
    expect(base64DecodedLength(text)).toBe(bytes)
    expect(Buffer.from(text, 'base64').length).toBe(bytes)
  })

  it.each(['A', 'QUJDR', 'QQ=', 'QUJDR==', 'QUJD='])('refuses %j by its length', async (text) => {
    expect(await codeOf(() => base64DecodedLength(text))).toBe('request/invalid')
  })
})

describe('decodeBase64', () => {
  const sample = (n: number) => Buffer.from(Array.from({ length: n }, (_, i) => (i * 131 + (i >> 8)) & 0xff))

  it('decodes exactly across slice boundaries, padded or not', async () => {
    for (const n of [0, 1, 2, 3, CONTENT_SLICE_SIZE - 1, CONTENT_SLICE_SIZE + 2, 2 * CONTENT_SLICE_SIZE + 1]) {
      const raw = sample(n)
      const padded = raw.toString('base64')
      for (const text of [padded, padded.replace(/=+$/, '')]) {
        expect(Buffer.from(await decodeBase64(text, n)).equals(raw), `${n} bytes`).toBe(true)
      }
    }
  })

  it('refuses a text decoding beyond the limit before looking at its characters (413)', async () => {
    expect(await codeOf(() => decodeBase64('!!!!', 2))).toBe('request/too-large')
    expect(await codeOf(() => decodeBase64('!!!!', 3))).toBe('request/invalid')
  })

  it('refuses a bad character in any slice, and "=" anywhere but the end (400)', async () => {
    const good = sample(3 * CONTENT_SLICE_SIZE).toString('base64')
    for (const at of [0, CONTENT_SLICE_SIZE + 5, good.length - 1]) {
      const bad = `${good.slice(0, at)}-${good.slice(at + 1)}`
      expect(await codeOf(() => decodeBase64(bad, Infinity)), `at ${at}`).toBe('request/invalid')
    }
    for (const text of ['QQ==QQ==', 'Q=Q=', 'Q===', 'QUJD====', ' QUJD', 'QUJD\n']) {
      expect(await codeOf(() => decodeBase64(text, Infinity)), JSON.stringify(text)).toBe('request/invalid')
    }
  })
})

describe('encodeUtf8', () => {
  it('never splits a surrogate pair at a slice boundary', async () => {
    const text = `${'a'.repeat(CONTENT_SLICE_SIZE - 1)}😀${'é'.repeat(10)}`
    const expected = Buffer.from(text, 'utf8')
    expect(Buffer.from(await encodeUtf8(text, Infinity)).equals(expected)).toBe(true)
  })

  it('refuses text over the limit in bytes, not characters (413)', async () => {
    expect((await encodeUtf8('éé', 4)).length).toBe(4)
    expect(await codeOf(() => encodeUtf8('ééé', 5))).toBe('request/too-large')
    expect(await codeOf(() => encodeUtf8('é'.repeat(CONTENT_SLICE_SIZE), CONTENT_SLICE_SIZE))).toBe('request/too-large')
  })
})

describe('base64 and base64url', () => {
  const sizes = [0, 1, 2, 3, 4, 5, 0x8000 - 1, 0x8000, 0x8000 + 1, 100_000]
  it.each(sizes)('round-trips %i bytes, equal to Node’s encoders', (n) => {
    const raw = Buffer.from(Array.from({ length: n }, (_, i) => (i * 7 + 3) % 256))
    expect(toBase64(raw)).toBe(raw.toString('base64'))
    expect(toBase64url(raw)).toBe(raw.toString('base64url'))
    expect(Buffer.from(fromBase64(raw.toString('base64'))).equals(raw)).toBe(true)
    expect(Buffer.from(fromBase64url(raw.toString('base64url'))!).equals(raw)).toBe(true)
  })

  it('decodes only the canonical base64url spelling', () => {
    const canonical = toBase64url(new Uint8Array([0xff, 0xee]))
    const flipped = canonical.slice(0, -1) + String.fromCharCode(canonical.charCodeAt(canonical.length - 1) + 1)
    expect(fromBase64url(canonical)).toEqual(new Uint8Array([0xff, 0xee]))
    for (const text of [flipped, `${canonical}=`, 'a+b/', 'a', '!!']) expect(fromBase64url(text), text).toBeUndefined()
  })

  it('throws for text that is not base64', () => {
    expect(() => fromBase64('!!!!')).toThrow()
  })
})
