/**
 * Delivery coalescing, pure. Native records keep their own sequences in the spool; only delivery
 * merges adjacent Data records into one item while the item's JSON encoding (base64 payload) stays
 * within the budget. A Resize is never merged, and an item's `sequence` is the last native record
 * it consumed, so any native sequence stays a valid, exact `after` cursor.
 */
import { MAX_OUTPUT_ITEM_BYTES } from '../../schema/limits.ts'
import type { OutputItem } from '../../schema/wire/output.ts'

/** What the planner needs to know about a native record: no bytes, just sizes. */
export type RecordMeta =
  | { kind: 'data'; sequence: number; length: number }
  | { kind: 'resize'; sequence: number; cols: number; rows: number }

/** A native record with its bytes (a Data record) or geometry (a Resize record). */
export type NativeRecord =
  | { kind: 'data'; sequence: number; bytes: Uint8Array }
  | { kind: 'resize'; sequence: number; cols: number; rows: number }

/** One planned item: the inclusive run of native records it consumes. */
export type ItemPlan =
  | { kind: 'data'; first: number; last: number; length: number }
  | { kind: 'resize'; first: number; last: number; cols: number; rows: number }

/** `{"kind":"data","sequence":,"data":""}` without the sequence digits. */
const DATA_ENVELOPE_BYTES = JSON.stringify({ kind: 'data', sequence: 0, data: '' }).length - 1

/** Exact length of `JSON.stringify({kind:'data', sequence, data: base64(rawBytes)})`. */
export function encodedDataItemBytes(sequence: number, rawBytes: number): number {
  return DATA_ENVELOPE_BYTES + String(sequence).length + 4 * Math.ceil(rawBytes / 3)
}

/**
 * Groups records (consecutive sequences, in order) into items. Stops after `maxItems` items. A
 * Data record that alone exceeds the budget is a journal bug (records are split at
 * MAX_RECORD_RAW_BYTES) and throws.
 */
export function planItems(records: readonly RecordMeta[], maxItems = Number.POSITIVE_INFINITY, budget = MAX_OUTPUT_ITEM_BYTES): ItemPlan[] {
  const plans: ItemPlan[] = []
  let open: Extract<ItemPlan, { kind: 'data' }> | undefined
  for (const record of records) {
    if (record.kind === 'resize') {
      if (plans.length >= maxItems) break
      open = undefined
      plans.push({ kind: 'resize', first: record.sequence, last: record.sequence, cols: record.cols, rows: record.rows })
      continue
    }
    if (open && encodedDataItemBytes(record.sequence, open.length + record.length) <= budget) {
      open.last = record.sequence
      open.length += record.length
      continue
    }
    if (encodedDataItemBytes(record.sequence, record.length) > budget) {
      throw new Error(`native record ${record.sequence} (${record.length} bytes) cannot fit one output item`)
    }
    if (plans.length >= maxItems) break
    open = { kind: 'data', first: record.sequence, last: record.sequence, length: record.length }
    plans.push(open)
  }
  return plans
}

/** Plans and materializes items from records that carry their bytes. */
export function coalesce(
  records: readonly NativeRecord[],
  maxItems = Number.POSITIVE_INFINITY,
  budget = MAX_OUTPUT_ITEM_BYTES,
): OutputItem[] {
  const metas = records.map(toMeta)
  const bySequence = new Map(records.map((r) => [r.sequence, r]))
  return planItems(metas, maxItems, budget).map((plan) => {
    if (plan.kind === 'resize') return { kind: 'resize', sequence: plan.last, cols: plan.cols, rows: plan.rows }
    const parts: Uint8Array[] = []
    for (let s = plan.first; s <= plan.last; s++) parts.push((bySequence.get(s) as { bytes: Uint8Array }).bytes)
    return { kind: 'data', sequence: plan.last, data: Buffer.concat(parts).toString('base64') }
  })
}

export function toMeta(record: NativeRecord): RecordMeta {
  return record.kind === 'data'
    ? { kind: 'data', sequence: record.sequence, length: record.bytes.length }
    : { kind: 'resize', sequence: record.sequence, cols: record.cols, rows: record.rows }
}
