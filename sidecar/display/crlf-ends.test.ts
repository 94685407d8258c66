/**
 * The planner's CR LF store keeps exactly the entries from `head` on, in order, however pushes,
 * consumption (head moving), compaction, growth and resets interleave.
 */
import { describe, expect, it } from 'vitest'
import { CrLfEnds } from './crlf-ends.ts'

function live(store: CrLfEnds): Array<[number, number]> {
  const out: Array<[number, number]> = []
  for (let i = store.head; i < store.length; i++) out.push([store.ends[i], store.counts[i]])
  return out
}

describe('CrLfEnds', () => {
  it('matches a plain list through pushes, skips, compaction and growth', () => {
    const store = new CrLfEnds()
    let reference: Array<[number, number]> = []
    let x = 11
    const rand = (n: number) => ((x = (x * 1103515245 + 12345) % 2147483648), x % n)
    let position = 2 ** 33 // past 32-bit positions: a long-lived terminal's output
    for (let step = 0; step < 400; step++) {
      const pushes = rand(900)
      for (let i = 0; i < pushes; i++) {
        position += 1 + rand(200)
        store.push(position, step * 1000 + i)
        reference.push([position, step * 1000 + i])
      }
      // A skip consumes a prefix: the planner moves `head` past the entry it picked.
      const consumed = rand(reference.length + 1)
      store.head += consumed
      reference = reference.slice(consumed)
      expect(live(store)).toEqual(reference)
      if (step % 97 === 96) {
        store.reset()
        reference = []
        expect(live(store)).toEqual([])
      }
    }
  })

  it('gives back a flood-sized store when its stretch ends and everything when none is open, and starts small', () => {
    const store = new CrLfEnds()
    const initial = store.ends.length
    for (let i = 0; i < 100_000; i++) store.push(i, i)
    expect(store.ends.length).toBeGreaterThan(16_384)
    store.reset()
    expect(store.ends.length).toBe(initial)
    expect(initial).toBeLessThanOrEqual(256)
    for (let i = 0; i < 10_000; i++) store.push(i, i)
    store.reset()
    expect(store.ends.length).toBeGreaterThan(initial)
    store.release()
    expect(store.ends.length).toBe(initial)
    expect(live(store)).toEqual([])
  })
})
