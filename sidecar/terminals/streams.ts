/**
 * The two per-terminal streams: `follow` (attach as the controller: snapshot, then output and
 * state) and `retain` (a hold that keeps the terminal from idle reclamation).
 */
import { CONTROL_RENEW_MS, SSE_HEARTBEAT_MS } from '../../schema/limits.ts'
import type { Geometry } from '../../schema/wire/common.ts'
import type { FollowControl } from '../../schema/wire/terminals.ts'
import { RawJson, type SseEvent } from '../../common/sse.ts'
import { STREAM_BATCH_ITEMS } from '../journal/shared-batches.ts'
import type { LiveTerminal } from './terminal.ts'
import { hopMark } from '../../common/hop-trace.ts'

const finished = (t: LiveTerminal) => t.state === 'closed' || t.state === 'retired'

/**
 * Follow. Without `resumeAfter`: a `snapshot` of the emulator at a known sequence, then `output`
 * (id = sequence) after it. With `resumeAfter` (Last-Event-ID): a `state` frame carrying
 * `replayThrough` (the last journaled sequence: the end of the replayed backlog), then output after
 * that sequence. Resize records become `state` frames in output order (id = their sequence), and
 * every other info change (title, controller, lifecycle) a `state` frame as it happens; the
 * geometry in a state frame is always the one the stream has reached. Ends after the terminal
 * closed and its output was drained.
 */
export async function* follow(
  terminal: LiveTerminal,
  attachmentId: string,
  principal: string | undefined,
  resumeAfter: number | undefined,
  signal: AbortSignal,
  control: FollowControl = 'take',
): AsyncGenerator<SseEvent, void, void> {
  const journal = terminal.journal
  const release = journal.attach()
  let token: string
  try {
    // Before the first event: a refused `if-free` attach fails the request (409), not the stream.
    token = terminal.attach(attachmentId, principal, control === 'if-free')
  } catch (error) {
    release()
    throw error
  }
  // A follower keeps the screen in its emulator (no idle release while anyone watches).
  const hold = terminal.emulator.hold()
  try {
    let cursor: number
    let geometry: Geometry
    // The info version the first frame shows, read with that info: a change that lands while the
    // frame waits to be taken (an exit right after the first bytes) is still sent after it.
    let version: number
    if (resumeAfter === undefined) {
      const snapshot = await terminal.emulator.snapshot()
      cursor = snapshot.sequence
      geometry = { cols: snapshot.cols, rows: snapshot.rows }
      version = terminal.version
      const marks = terminal.markNonce === undefined ? {} : { marks: terminal.markNonce }
      yield { event: 'snapshot', id: cursor, data: { sequence: cursor, screen: snapshot.screen, info: terminal.info(geometry), ...marks } }
    } else {
      cursor = resumeAfter
      geometry = journal.geometryAt(cursor)
      // Tells the client exactly where the replayed backlog ends, so it can tell replayed terminal
      // queries (never to be answered) from live ones.
      version = terminal.version
      yield { event: 'state', data: { info: terminal.info(geometry), replayThrough: journal.lastSequence } }
    }
    for (;;) {
      const items = await journal.readItems(cursor, STREAM_BATCH_ITEMS)
      for (const item of items) {
        cursor = item.sequence
        if (item.kind === 'data') {
          hopMark('sidecar: output item → follow stream')
          yield { event: 'output', id: cursor, data: new RawJson(`{"sequence":${cursor},"data":"${item.data}"}`) }
        } else {
          geometry = { cols: item.cols, rows: item.rows }
          yield { event: 'state', id: cursor, data: { info: terminal.info(geometry) } }
        }
      }
      // Lifecycle changes (exited, closed) wait until the output before them is delivered; title
      // and controller changes go out at once, even mid-flood.
      const caughtUp = cursor >= journal.lastSequence
      if (terminal.version !== version && (caughtUp || terminal.state === 'running')) {
        version = terminal.version
        yield { event: 'state', data: { info: terminal.info(geometry) } }
      }
      if (signal.aborted) return
      if (items.length > 0) continue
      const drained = cursor >= journal.lastSequence
      if (drained && (journal.retired || (finished(terminal) && journal.ended))) return
      // The controller's stream never stays quiet longer than CONTROL_RENEW_MS: a write every
      // second is how every runtime between here and the client finds a client that left (its
      // write fails), which ends this stream and so frees control at once. A read-only follow
      // holds nothing and keeps the plain heartbeat.
      const controlling = terminal.controls(token)
      const quiet = controlling ? CONTROL_RENEW_MS : SSE_HEARTBEAT_MS
      // After EOF only info changes can come (journal.wait would return at once, forever).
      const woke = journal.ended
        ? await terminal.changes.wait(quiet, signal)
        : await journal.waitOr(cursor, [terminal.changes], quiet, signal)
      if (woke === 'aborted') return
      if (woke === 'timeout') yield { comment: controlling ? 'control' : 'heartbeat' }
    }
  } finally {
    hold()
    terminal.detach(token)
    release()
  }
}

/** Retain: `retained`, then heartbeats until the client leaves or the terminal closes. */
export async function* retain(terminal: LiveTerminal, signal: AbortSignal): AsyncGenerator<SseEvent, void, void> {
  terminal.holds++
  try {
    yield { event: 'retained', data: {} }
    while (!finished(terminal) && !terminal.closeRequested) {
      const woke = await terminal.changes.wait(SSE_HEARTBEAT_MS, signal)
      if (woke === 'aborted') return
      if (woke === 'timeout') yield { comment: 'heartbeat' }
    }
  } finally {
    terminal.holds--
    terminal.lastActivity = Date.now()
  }
}
