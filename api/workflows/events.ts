/**
 * `GET …/workflows/:rid/events`: a run's events from libSQL in sequence order, id = sequence, then
 * the new ones as the sidecar writes them (polled: any API instance may serve the stream, and the
 * sidecar is not needed, so a finished run replays with the sidecar down). The stream ends after
 * `workflow/end`; a run whose sidecar died ends it with `interrupted` (no id) after its last
 * event. Resuming with Last-Event-ID (or ?after=) sends exactly what followed that sequence.
 */
import { WORKFLOW_EVENTS_POLL_MS } from '../tuning.ts'
import { pause } from '../../common/retry.ts'
import type { Database } from '../../storage/client.ts'
import type { SseSink } from '../sse.ts'
import { eventsAfter, runState } from '../../storage/workflows/runs.ts'

const PAGE = 500

export interface EventsTuning {
  pollMs?: number
  /** End the stream (cleanly) after this many polls; the client resumes with Last-Event-ID. */
  maxPolls?: number
}

export async function streamRunEvents(
  db: Database,
  run: { sessionId: string; runId: string },
  after: number,
  sink: SseSink,
  { pollMs = WORKFLOW_EVENTS_POLL_MS, maxPolls = Infinity }: EventsTuning = {},
): Promise<void> {
  let cursor = after
  // A run that ended or was interrupted: its log is complete; one more read after learning so
  // catches events written just before the status changed (the end and its row are one transaction).
  let lastRead = false
  for (let polls = 0; !sink.signal.aborted && polls < maxPolls; polls++) {
    const events = await eventsAfter(db, run.runId, cursor, PAGE)
    for (const event of events) {
      await sink.send({ event: event.type, id: event.sequence, data: event.data })
      cursor = event.sequence
      if (event.type === 'workflow/end') return
    }
    if (events.length === PAGE) continue
    const { status } = await runState(db, run.sessionId, run.runId)
    if (status !== 'running') {
      if (!lastRead) {
        lastRead = true
        continue
      }
      if (status === 'interrupted') {
        await sink.send({
          event: 'interrupted',
          data: { reason: 'the sidecar running this workflow stopped before it ended; its open members were retired' },
        })
      }
      return
    }
    await pause(pollMs, sink.signal)
  }
}
