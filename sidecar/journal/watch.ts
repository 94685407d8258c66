/**
 * watchOutput as a stream of SSE events: `begin`, then every item after the cursor (`data` /
 * `resize`, id = sequence), then `closed` once the byte source ended and everything was delivered,
 * or `unavailable` if the journal went away before EOF. Backlog and live output are one loop over
 * the journal's index, so they join without a gap or a duplicate. Batches are read and encoded
 * once for every watcher at the same cursor (shared-batches.ts).
 */
import { SSE_HEARTBEAT_MS } from '../../schema/limits.ts'
import type { SseYield } from '../http/sse.ts'
import type { Journal } from './journal.ts'
import { SharedBatches } from './shared-batches.ts'

export async function* watchOutput(journal: Journal, after: number, signal: AbortSignal): AsyncGenerator<SseYield, void, void> {
  const release = journal.attach()
  const batches = SharedBatches.join(journal)
  try {
    let cursor = after
    // The first read happens before `begin`, so a broken spool fails the call itself.
    let batch = await batches.read(cursor)
    yield { event: 'begin', data: after === 0 ? { initialSize: journal.initialSize } : {} }
    for (;;) {
      if (batch) {
        // One batch per read: one HTTP write instead of one per item.
        yield batch.frames
        cursor = batch.last
      }
      if (signal.aborted) return
      if (!batch) {
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
      batch = await batches.read(cursor)
    }
  } finally {
    batches.leave()
    release()
  }
}
