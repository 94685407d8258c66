import { randomBytes } from 'node:crypto'
import { describe, expect, it } from 'vitest'
import { sseFrame } from '../../common/sse.ts'
import type { ItemPlan } from './coalesce.ts'
import { frameItems } from './frames.ts'

describe('frameItems', () => {
  // Items longer than one base64 piece (48 KiB), of lengths that are and are not multiples of 3,
  // between a resize: byte for byte what sseFrame gives for the same events.
  it('frames items of any length exactly as sseFrame does', () => {
    const lengths = [1, 48 * 1024, 48 * 1024 + 1, 200_001, 1024 * 1024 - 2]
    const bytes = randomBytes(lengths.reduce((a, b) => a + b, 0))
    const plans: ItemPlan[] = []
    let expected = ''
    let at = 0
    lengths.forEach((length, i) => {
      const sequence = i * 2 + 1
      plans.push({ kind: 'data', first: sequence, last: sequence, length })
      const data = bytes.toString('base64', at, at + length)
      expected += sseFrame({ event: 'data', id: sequence, data: { sequence, data } })
      at += length
      plans.push({ kind: 'resize', first: sequence + 1, last: sequence + 1, cols: 80 + i, rows: 24 })
      expected += sseFrame({ event: 'resize', id: sequence + 1, data: { sequence: sequence + 1, cols: 80 + i, rows: 24 } })
    })
    const framed = Buffer.from(frameItems(plans, bytes).bytes).toString('latin1')
    expect(framed.length).toBe(expected.length)
    expect(framed === expected).toBe(true)
  })
})
