/**
 * watchOutput as a stream of SSE events: `begin`, then every item after the cursor (`data` /
 * `resize`, id = sequence), then `closed` once the byte source ended and everything was delivered,
 * or `unavailable` if the journal went away before EOF. Backlog and live output are one loop over
 * the journal's index, so they join without a gap or a duplicate.
 */
import { SSE_HEARTBEAT_MS } from '../../schema/limits.ts'
import type { OutputItem } from '../../schema/wire/output.ts'
import { formatSse, RawJson, SseFrames, type SseEvent, type SseYield } from '../http/sse.ts'
import type { ItemPlan } from './coalesce.ts'
import type { Journal } from './journal.ts'

/** Items read per spool round trip while streaming. */
const STREAM_BATCH_ITEMS = 16

export function itemEvent(item: OutputItem): SseEvent {
  return item.kind === 'data'
    ? { event: 'data', id: item.sequence, data: new RawJson(`{"sequence":${item.sequence},"data":"${item.data}"}`) }
    : { event: 'resize', id: item.sequence, data: { sequence: item.sequence, cols: item.cols, rows: item.rows } }
}

/**
 * SSE frames for planned items and their raw bytes (as `Journal.readPlanned` returns them), in one
 * buffer: each Data item is `event: data`, `id: N`, `data: {"sequence":N,"data":"<base64>"}` —
 * byte for byte what `formatSse(itemEvent(item))` gives — with the base64 written in place. Only
 * ASCII is written here; a Resize goes through formatSse.
 */
export function frameItems(plans: readonly ItemPlan[], bytes: Buffer, dataEvent = 'data'): SseFrames {
  const heads: string[] = []
  let total = 0
  for (const p of plans) {
    const head =
      p.kind === 'data'
        ? `event: ${dataEvent}\nid: ${p.last}\ndata: {"sequence":${p.last},"data":"`
        : formatSse(itemEvent({ kind: 'resize', sequence: p.last, cols: p.cols, rows: p.rows }))
    heads.push(head)
    total += head.length + (p.kind === 'data' ? 4 * Math.ceil(p.length / 3) + DATA_TAIL.length : 0)
  }
  const out = Buffer.allocUnsafe(total)
  let at = 0
  let from = 0
  plans.forEach((p, i) => {
    at += out.write(heads[i], at, 'latin1')
    if (p.kind !== 'data') return
    at += out.write(bytes.toString('base64', from, from + p.length), at, 'latin1')
    from += p.length
    at += out.write(DATA_TAIL, at, 'latin1')
  })
  return new SseFrames(out)
}

const DATA_TAIL = '"}\n\n'

export async function* watchOutput(journal: Journal, after: number, signal: AbortSignal): AsyncGenerator<SseYield, void, void> {
  const release = journal.attach()
  try {
    let cursor = after
    // The first read happens before `begin`, so a broken spool fails the call itself.
    let items = await journal.readPlanned(cursor, STREAM_BATCH_ITEMS)
    yield { event: 'begin', data: after === 0 ? { initialSize: journal.initialSize } : {} }
    for (;;) {
      if (items.plans.length > 0) {
        // One batch per spool read: one HTTP write instead of one per item.
        yield frameItems(items.plans, items.bytes)
        cursor = items.plans.at(-1)!.last
      }
      if (signal.aborted) return
      if (items.plans.length === 0) {
        if (cursor >= journal.lastSequence) {
          if (journal.ended) {
            yield { event: 'closed', id: cursor, data: { sequence: cursor } }
            return
          }
          if (journal.retired) {
            yield { event: 'unavailable', data: {} }
            return
          }
        }
        const woke = await journal.wait(cursor, SSE_HEARTBEAT_MS, signal)
        if (woke === 'aborted') return
        if (woke === 'timeout') yield { comment: 'heartbeat' }
      }
      items = await journal.readPlanned(cursor, STREAM_BATCH_ITEMS)
    }
  } finally {
    release()
  }
}
