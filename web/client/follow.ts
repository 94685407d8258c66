/**
 * Following a live terminal (attach), shared by the page and `termkeep attach`: one SSE stream of
 * `snapshot`, `output` and `state`, resumed after a network loss with `Last-Event-ID` = the last
 * output sequence applied, so nothing is lost or applied twice; a sidecar that is down for a
 * moment (503: it restarts, and adopts the terminal) is waited for the same way. A refusal (410
 * unavailable, 503 for longer than UNAVAILABLE_RETRY_MS, 404, 409) ends the follow with that
 * error; the caller then shows the persisted display or a message.
 */
import { fromBase64 } from '../../common/bytes.ts'
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { ApiError, terminalPath, type TermkeepClient } from './api.ts'

/** Backoff between reconnection attempts after a network loss. */
const RECONNECT_DELAYS_MS = [250, 500, 1000, 2000, 4000]
/**
 * How long 503 answers (the sidecar is down) are retried, with the backoff, before the follow
 * counts as refused: a terminal outlives its sidecar (the keeper holds it), and `termkeep serve`
 * starts a crashed sidecar again after 1 s, which then takes a few seconds to come up.
 */
const UNAVAILABLE_RETRY_MS = 15_000
/**
 * Once the terminal reports that its process exited, output still in flight is drained until the
 * stream has been quiet this long, then the follow ends (the server may keep an exited terminal's
 * stream open until it is closed).
 */
const EXIT_DRAIN_MS = 300
/** A stream that ends cleanly this many times in a row without an event is treated as over. */
const MAX_EMPTY_STREAMS = 3

export interface FollowHandlers {
  /** The screen at `sequence` (ANSI) plus the terminal info; sent on a fresh attach only. `marks`:
   * the nonce of its shell's command marks, when it has integration (docs/commands.md). */
  snapshot(sequence: number, screen: string, info: TerminalInfo, marks?: string): void
  /**
   * Bytes after the snapshot, in order. `backlog` is true for bytes the server replays on a
   * reconnect (journaled up to the resume's `replayThrough`, i.e. printed while this client was
   * away); bytes printed after the resume are live.
   */
  output(sequence: number, bytes: Uint8Array, backlog: boolean): void
  state(info: TerminalInfo): void
  /** Connection status, for a banner. */
  status?(status: 'connecting' | 'live' | 'reconnecting'): void
}

export type FollowEnd =
  /** The process exited or the terminal closed (its output drained), or the server stopped sending. */
  | { kind: 'ended'; info?: TerminalInfo }
  /** Refused: retired terminal (410), sidecar down (503), unknown terminal (404), … */
  | { kind: 'refused'; error: ApiError }
  | { kind: 'aborted' }

export interface FollowOptions {
  client: TermkeepClient
  sessionId: string
  terminalId: string
  attachment: string
  handlers: FollowHandlers
  signal: AbortSignal
}

const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms)
    signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true })
  })

/** Runs the follow until the server ends it, refuses it, or `signal` aborts. */
export async function follow(options: FollowOptions): Promise<FollowEnd> {
  const { client, sessionId, terminalId, attachment, handlers, signal } = options
  const path = `${terminalPath(sessionId, terminalId)}/follow?attachment=${encodeURIComponent(attachment)}`
  let lastSequence: number | undefined
  let lastInfo: TerminalInfo | undefined
  let failures = 0
  let emptyStreams = 0
  let unavailable = 0
  /** When the sidecar first answered 503 in the current run of them. */
  let unavailableSince: number | undefined
  while (!signal.aborted) {
    handlers.status?.(lastSequence === undefined && failures === 0 ? 'connecting' : 'reconnecting')
    let sawEvent = false
    // Aborted by the caller, or by this loop once an exited terminal's output has drained.
    const stream = new AbortController()
    const stopStream = () => stream.abort()
    signal.addEventListener('abort', stopStream, { once: true })
    let drain: ReturnType<typeof setTimeout> | undefined
    const exited = () => lastInfo !== undefined && lastInfo.state !== 'starting' && lastInfo.state !== 'running'
    try {
      const resumed = lastSequence !== undefined
      const events = await client.stream(path, { lastEventId: resumed ? String(lastSequence) : undefined, signal: stream.signal })
      handlers.status?.('live')
      failures = 0
      unavailable = 0
      unavailableSince = undefined
      // On a resume the server's first `state` frame says where the replayed backlog ends.
      let replayThrough = 0
      for await (const event of events) {
        sawEvent = true
        const body = JSON.parse(event.data) as Record<string, unknown>
        if (event.event === 'snapshot') {
          lastSequence = Number(body.sequence)
          lastInfo = body.info as TerminalInfo
          handlers.snapshot(lastSequence, String(body.screen), lastInfo, typeof body.marks === 'string' ? body.marks : undefined)
        } else if (event.event === 'output') {
          const sequence = Number(body.sequence)
          // A replay that overlaps what was applied is skipped, never written twice.
          if (lastSequence !== undefined && sequence <= lastSequence) continue
          lastSequence = sequence
          handlers.output(sequence, fromBase64(String(body.data)), resumed && sequence <= replayThrough)
        } else if (event.event === 'state') {
          if (typeof body.replayThrough === 'number') replayThrough = body.replayThrough
          lastInfo = body.info as TerminalInfo
          handlers.state(lastInfo)
        }
        clearTimeout(drain)
        if (exited()) drain = setTimeout(stopStream, EXIT_DRAIN_MS)
      }
      if (signal.aborted) break
      if (exited()) return { kind: 'ended', info: lastInfo }
      // A clean end while the process runs: the relay went away. Ask again; a live terminal
      // resumes after lastSequence, a gone one answers with a refusal.
      emptyStreams = sawEvent ? 0 : emptyStreams + 1
      if (emptyStreams >= MAX_EMPTY_STREAMS) return { kind: 'ended', info: lastInfo }
    } catch (error) {
      if (signal.aborted) break
      if (stream.signal.aborted && exited()) return { kind: 'ended', info: lastInfo }
      // A sidecar that does not answer may be only slow, or restarting (it then adopts the
      // terminal): retried, every second at most, for UNAVAILABLE_RETRY_MS.
      if (error instanceof ApiError && error.status === 503) {
        unavailableSince ??= Date.now()
        unavailable++
        if (Date.now() - unavailableSince > UNAVAILABLE_RETRY_MS) return { kind: 'refused', error }
      } else if (error instanceof ApiError) {
        return { kind: 'refused', error }
      }
      // Network loss (fetch failed, or the body errored mid-stream): retry with Last-Event-ID.
      if (!(error instanceof ApiError)) failures++
    } finally {
      clearTimeout(drain)
      signal.removeEventListener('abort', stopStream)
    }
    handlers.status?.('reconnecting')
    await sleep(RECONNECT_DELAYS_MS[Math.min(failures + Math.min(unavailable, 2), RECONNECT_DELAYS_MS.length - 1)], signal)
  }
  return { kind: 'aborted' }
}
