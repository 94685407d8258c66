import { describe, expect, it } from 'vitest'
import { MAX_OUTPUT_ITEM_BYTES, MAX_RECORD_RAW_BYTES } from '../../schema/limits.ts'
import { coalesce, encodedDataItemBytes, planItems, type NativeRecord, type RecordMeta } from './coalesce.ts'

const data = (sequence: number, length: number): RecordMeta => ({ kind: 'data', sequence, length })
const resize = (sequence: number, cols = 80, rows = 24): RecordMeta => ({ kind: 'resize', sequence, cols, rows })
const ranges = (metas: RecordMeta[], maxItems?: number, budget?: number) =>
  planItems(metas, maxItems, budget).map((p) => `${p.kind[0]}${p.first}-${p.last}`)

describe('encodedDataItemBytes', () => {
  it.each([
    [1, 0],
    [7, 1],
    [12345, 3],
    [999_999_999, 48_000],
  ])('equals JSON.stringify length for sequence %i and %i raw bytes', (sequence, raw) => {
    const item = { kind: 'data', sequence, data: Buffer.alloc(raw, 0x41).toString('base64') }
    expect(encodedDataItemBytes(sequence, raw)).toBe(JSON.stringify(item).length)
  })

  it('lets one maximal native record fit an item even at a 15-digit sequence', () => {
    expect(encodedDataItemBytes(999_999_999_999_999, MAX_RECORD_RAW_BYTES)).toBeLessThanOrEqual(MAX_OUTPUT_ITEM_BYTES)
  })
})

describe('planItems', () => {
  const table: Array<[string, RecordMeta[], number | undefined, number | undefined, string[]]> = [
    ['nothing', [], undefined, undefined, []],
    ['adjacent small data merge', [data(1, 10), data(2, 10), data(3, 10)], undefined, undefined, ['d1-3']],
    ['a resize is never merged and splits data', [data(1, 10), resize(2), data(3, 10)], undefined, undefined, ['d1-1', 'r2-2', 'd3-3']],
    ['consecutive resizes stay separate', [resize(1), resize(2)], undefined, undefined, ['r1-1', 'r2-2']],
    [
      'budget closes an item',
      [data(1, 30), data(2, 30), data(3, 30)],
      undefined,
      encodedDataItemBytes(2, 60) - 1,
      ['d1-1', 'd2-2', 'd3-3'],
    ],
    ['budget exactly met merges', [data(1, 3), data(2, 3)], undefined, encodedDataItemBytes(2, 6), ['d1-2']],
    ['one byte under budget splits', [data(1, 3), data(2, 3)], undefined, encodedDataItemBytes(2, 6) - 1, ['d1-1', 'd2-2']],
    ['real budget: two 30 KB reads do not merge', [data(1, 30_000), data(2, 30_000)], undefined, undefined, ['d1-1', 'd2-2']],
    ['real budget: sixteen 3 KB reads merge', Array.from({ length: 16 }, (_, i) => data(i + 1, 3000)), undefined, undefined, ['d1-16']],
    ['maxItems stops before a new item', [data(1, 10), resize(2), data(3, 10)], 2, undefined, ['d1-1', 'r2-2']],
    ['maxItems does not cut a merging item', [data(1, 10), data(2, 10), resize(3)], 1, undefined, ['d1-2']],
    ['starts mid-stream (after = 41)', [data(42, 5), data(43, 5)], undefined, undefined, ['d42-43']],
  ]
  it.each(table)('%s', (_name, metas, maxItems, budget, expected) => {
    expect(ranges(metas, maxItems, budget)).toEqual(expected)
  })

  it('throws for a native record too large for any item (a journal bug)', () => {
    expect(() => planItems([data(1, 60_000)])).toThrow(/cannot fit/)
  })
})

describe('coalesce', () => {
  it('concatenates bytes in order, takes the last consumed sequence and stays within budget', () => {
    const records: NativeRecord[] = [
      { kind: 'data', sequence: 1, bytes: Buffer.from('ab') },
      { kind: 'data', sequence: 2, bytes: Buffer.from('cd') },
      { kind: 'resize', sequence: 3, cols: 100, rows: 30 },
      { kind: 'data', sequence: 4, bytes: Buffer.from('e') },
    ]
    expect(coalesce(records)).toEqual([
      { kind: 'data', sequence: 2, data: Buffer.from('abcd').toString('base64') },
      { kind: 'resize', sequence: 3, cols: 100, rows: 30 },
      { kind: 'data', sequence: 4, data: Buffer.from('e').toString('base64') },
    ])
  })

  it('never produces an item over the budget, and merges maximally', () => {
    const sizes = [48_000, 1, 47_999, 2, 16_000, 16_000, 16_000, 5, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096, 4096]
    const records: NativeRecord[] = sizes.map((n, i) => ({ kind: 'data', sequence: i + 1, bytes: Buffer.alloc(n, i) }))
    const items = coalesce(records)
    let consumed = 0
    for (const [i, item] of items.entries()) {
      expect(JSON.stringify(item).length).toBeLessThanOrEqual(MAX_OUTPUT_ITEM_BYTES)
      const next = records[item.sequence] // the record after this item
      if (next && i + 1 < items.length && next.kind === 'data') {
        const raw = Buffer.from((item as { data: string }).data, 'base64').length
        expect(encodedDataItemBytes(next.sequence, raw + next.bytes.length)).toBeGreaterThan(MAX_OUTPUT_ITEM_BYTES)
      }
      consumed = item.sequence
    }
    expect(consumed).toBe(records.length)
    const all = Buffer.concat(items.map((i) => Buffer.from((i as { data: string }).data, 'base64')))
    expect(all.equals(Buffer.concat(records.map((r) => (r as { bytes: Uint8Array }).bytes)))).toBe(true)
  })
})
