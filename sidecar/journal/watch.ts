/**
 * watchOutput as a stream of SSE events: `begin`, then every item after the cursor (`data` /
 * `resize`, id = sequence), then `closed` once the byte source ended and everything was delivered,
 * or `unavailable` if the journal went away before EOF. Backlog and live output are one loop over
 * the journal's index, so they join without a gap or a duplicate.
 */
import { SSE_HEARTBEAT_MS } from '../../schema/limits.ts'
import type { OutputItem } from '../../schema/wire/output.ts'
import { RawJson, type SseEvent, type SseYield } from '../http/sse.ts'
import type { Journal } from './journal.ts'

/** Items read per spool round trip while streaming. */
const STREAM_BATCH_ITEMS = 16

export function itemEvent(item: OutputItem): SseEvent {
  return item.kind === 'data'
    ? { event: 'data', id: item.sequence, data: new RawJson(`{"sequence":${item.sequence},"data":"${item.data}"}`) }
    : { event: 'resize', id: item.sequence, data: { sequence: item.sequence, cols: item.cols, rows: item.rows } }
}

export async function* watchOutput(journal: Journal, after: number, signal: AbortSignal): AsyncGenerator<SseYield, void, void> {
  const release = journal.attach()
  try {
    let cursor = after
    // The first read happens before `begin`, so a broken spool fails the call itself.
    let items = await journal.readItems(cursor, STREAM_BATCH_ITEMS)
    yield { event: 'begin', data: after === 0 ? { initialSize: journal.initialSize } : {} }
    for (;;) {
      if (items.length > 0) {
        // One batch per spool read: one HTTP write instead of one per item.
        yield items.map(itemEvent)
        cursor = items.at(-1)!.sequence
      }
      if (signal.aborted) return
      if (items.length === 0) {
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
      items = await journal.readItems(cursor, STREAM_BATCH_ITEMS)
    }
  } finally {
    release()
  }
}
