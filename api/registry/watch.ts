/**
 * `GET /v1/workspaces/watch`: one `baseline` (the list, id = the newest event sequence), then every
 * increment from `registry_events` in sequence order, id = its sequence. The log is read by
 * polling, because other API instances write to the same database; a mutation in this process
 * wakes its watchers at once. A reconnect with Last-Event-ID gets no baseline, only what
 * followed that id; a cursor newer than the log (e.g. from another database) or older than the
 * kept events (REGISTRY_EVENTS_KEPT; the ones after it were pruned) gets a baseline.
 *
 * A session-bound token sees only what scope.ts lets it (RegistryView). Its view depends on what
 * the stream has shown it, which a cursor does not carry, so its reconnect always starts with a
 * new baseline (a client already handles one: any reconnect may get it).
 */
import { REGISTRY_POLL_MS } from '../tuning.ts'
import type { Database } from '../../storage/client.ts'
import type { Authority } from '../../storage/authority.ts'
import type { SseSink } from '../sse.ts'
import { RegistryView } from './scope.ts'
import { eventsAfter, latestSeq, listWorkspaces, oldestSeq, onMutation } from '../../storage/registry/workspaces.ts'

const PAGE = 500

export interface WatchTuning {
  pollMs?: number
  /** End the stream (cleanly) after this many polls; the client resumes with Last-Event-ID. */
  maxPolls?: number
}

/** Every event after `after` is still in the log (none pruned), and `after` is not from the future. */
async function resumable(db: Database, after: number): Promise<boolean> {
  const [oldest, latest] = [await oldestSeq(db), await latestSeq(db)]
  return after <= latest && (oldest === 0 || after >= oldest - 1)
}

export async function watchRegistry(
  db: Database,
  authority: Authority,
  sink: SseSink,
  resumeAfter: number | undefined,
  { pollMs = REGISTRY_POLL_MS, maxPolls = Infinity }: WatchTuning = {},
): Promise<void> {
  let cursor: number
  const view = new RegistryView(authority)
  if (resumeAfter !== undefined && authority.sessions === 'all' && (await resumable(db, resumeAfter))) {
    cursor = resumeAfter
  } else {
    // One transaction: the baseline and its sequence describe the same moment.
    const { list, seq } = await db.transaction(async (tx) => ({ list: await listWorkspaces(tx), seq: await latestSeq(tx) }))
    cursor = seq
    await sink.send({ event: 'baseline', id: seq, data: view.baseline(list) })
  }
  let wake: (() => void) | undefined
  const unsubscribe = onMutation(db, () => wake?.())
  const onAbort = () => wake?.()
  sink.signal.addEventListener('abort', onAbort)
  try {
    for (let polls = 0; !sink.signal.aborted && polls < maxPolls; polls++) {
      const events = await eventsAfter(db, cursor, PAGE)
      for (const { seq, increment } of events) {
        const seen = view.next(increment)
        if (seen) await sink.send({ event: seen.kind, id: seq, data: seen.payload })
        cursor = seq
      }
      if (events.length === PAGE) continue
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, pollMs)
        wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
      wake = undefined
    }
  } finally {
    unsubscribe()
    sink.signal.removeEventListener('abort', onAbort)
  }
}
