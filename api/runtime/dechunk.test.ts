import { describe, expect, it } from 'vitest'
import { Dechunker } from './dechunk.ts'

const bytes = (s: string) => new Uint8Array(Buffer.from(s, 'latin1'))
const text = (parts: Uint8Array[]) => Buffer.concat(parts).toString('latin1')
const BODY = '5\r\nhello\r\n7;ext=1\r\n, world\r\n10\r\n0123456789abcdef\r\n0\r\nx-trailer: 1\r\n\r\n'

describe('Dechunker', () => {
  it('decodes a whole body, extensions and trailer included, and says when it is done', () => {
    const d = new Dechunker()
    expect(text(d.push(bytes(BODY)))).toBe('hello, world0123456789abcdef')
    expect(d.done).toBe(true)
  })

  it('gives the same payload however the bytes are split, down to one byte at a time', () => {
    for (const step of [1, 2, 3, 5, 7, 11, BODY.length]) {
      const d = new Dechunker()
      const parts: Uint8Array[] = []
      for (let i = 0; i < BODY.length; i += step) parts.push(...d.push(bytes(BODY.slice(i, i + step))))
      expect(text(parts), `step ${step}`).toBe('hello, world0123456789abcdef')
      expect(d.done).toBe(true)
    }
  })

  it('is not done before the last chunk; a malformed size line throws', () => {
    const d = new Dechunker()
    expect(text(d.push(bytes('5\r\nhello\r\n')))).toBe('hello')
    expect(d.done).toBe(false)
    expect(() => new Dechunker().push(bytes('zz\r\n'))).toThrow(/malformed size line/)
    expect(() => new Dechunker().push(bytes('f'.repeat(2000)))).toThrow(/too long/)
  })
})
