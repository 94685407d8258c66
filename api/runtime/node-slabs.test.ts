import { describe, expect, it } from 'vitest'
import { copyToSlab, SLAB_BYTES } from './node-slabs.ts'

const filled = (length: number, value: number) => new Uint8Array(length).fill(value)

describe('copyToSlab', () => {
  it('keeps a piece’s bytes while it is leased, and reuses its room only after every piece of the slab came back', () => {
    const third = Math.floor(SLAB_BYTES / 3)
    const first = copyToSlab(filled(third, 1))
    const second = copyToSlab(filled(third, 2))
    expect(second.bytes.buffer).toBe(first.bytes.buffer) // one slab, two pieces
    // The next copies do not fit: new slabs, while the first stays leased.
    const pieces = Array.from({ length: 6 }, (_, i) => copyToSlab(filled(third * 2, 10 + i)))
    expect(pieces.every((p) => p.bytes.buffer !== first.bytes.buffer)).toBe(true)
    expect(first.bytes.every((b) => b === 1)).toBe(true)
    expect(second.bytes.every((b) => b === 2)).toBe(true)
    pieces.forEach((p, i) => expect(p.bytes.every((b) => b === 10 + i)).toBe(true))

    first.release()
    first.release() // twice is once
    for (let i = 0; i < 4; i++) expect(copyToSlab(filled(third * 2, 30)).bytes.buffer).not.toBe(first.bytes.buffer)
    second.release()
    for (const p of pieces) p.release()
    // Every piece came back: the first slab is room again.
    const again = Array.from({ length: 4 }, () => copyToSlab(filled(third * 2, 40)))
    expect(again.some((p) => p.bytes.buffer === first.bytes.buffer)).toBe(true)
  })

  it('copies a view larger than a slab on its own', () => {
    const big = copyToSlab(filled(SLAB_BYTES + 1, 7))
    expect(big.bytes.length).toBe(SLAB_BYTES + 1)
    expect(big.bytes.every((b) => b === 7)).toBe(true)
  })
})
