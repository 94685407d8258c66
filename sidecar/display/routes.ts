/**
 * The sidecar's plain-projection routes (schema/wire/display.ts), same paths as the public API:
 *   GET /v1/sessions/:sid/terminals/:tid/screen        → ScreenProjection of the live emulator
 *   GET /v1/sessions/:sid/terminals/:tid/screen/watch  SSE `screen` (id = sequence) now and on each
 *       change, at most one per SCREEN_WATCH_INTERVAL_MS; `closed` {sequence} once the byte source
 *       ended and everything was shown, or the emulator went away.
 * Answered from the emulator worker (`screen-text`), after every record sent so far.
 */
import { Hono, type Context } from 'hono'
import { streamSSE } from 'hono/streaming'
import { TermkeepError } from '../../schema/errors.ts'
import { SCREEN_WATCH_INTERVAL_MS, SSE_HEARTBEAT_MS, TERMINAL_ID_PATTERN, SESSION_ID_PATTERN } from '../../schema/limits.ts'
import type { ScreenProjection } from '../../schema/wire/display.ts'
import type { SettleSource } from './keeper.ts'
import type { DisplayStats } from './service.ts'
import { SCREEN_TEXT } from './worker.ts'

/** What the routes need of the terminal host (sidecar/terminals/host.ts satisfies it). */
export interface ScreenHost {
  /** The live terminal, or a typed 404 / 410. */
  live(sessionId: string, terminalId: string): Promise<{ emulator: SettleSource & { hold(): () => void }; journal: ScreenJournal }>
}

/** What screen/watch needs of the journal: whether the byte source closed (or the journal was
 * retired without that), and a wait for news. */
export interface ScreenJournal {
  readonly ended: boolean
  readonly retired: boolean
  wait(after: number, timeoutMs: number, signal?: AbortSignal): Promise<'changed' | 'timeout' | 'aborted'>
}

/** Calls `onEnd` once the journal's byte source closes (or it retires), unless `signal` aborts
 * first. EOF applies no output, so the emulator's onApplied never tells of it. */
async function whenEnded(journal: ScreenJournal, signal: AbortSignal, onEnd: () => void): Promise<void> {
  // (A retired journal's wait answers at once: it must end this loop, not spin it.)
  while (!journal.ended && !journal.retired) {
    // Any change wakes this (a record too); only the end matters here.
    if ((await journal.wait(Number.MAX_SAFE_INTEGER, SSE_HEARTBEAT_MS, signal)) === 'aborted') return
  }
  onEnd()
}

export interface ScreenRouteOptions {
  intervalMs?: number
  heartbeatMs?: number
}

function ids(c: Context): { sid: string; tid: string } {
  const sid = c.req.param('sid') ?? ''
  const tid = c.req.param('tid') ?? ''
  if (!SESSION_ID_PATTERN.test(sid)) throw new TermkeepError('request/invalid', 'session ids are 1–128 of [A-Za-z0-9_-]')
  if (!TERMINAL_ID_PATTERN.test(tid)) throw new TermkeepError('terminal/invalid-id', 'terminal ids are 1–128 of [A-Za-z0-9_-]')
  return { sid, tid }
}

const sameText = (a: ScreenProjection, b: ScreenProjection) =>
  JSON.stringify({ ...a, sequence: 0 }) === JSON.stringify({ ...b, sequence: 0 })

/**
 * GET /v1/display/stats → DisplayStats (sidecar only, behind its secret): revisions and bytes the
 * display pipeline wrote, emulators released and rebuilt. For benchmarks and operations.
 */
export function displayStatsRoute(stats: () => DisplayStats): Hono {
  return new Hono().get('/v1/display/stats', (c) => c.json(stats()))
}

export function screenRoutes(host: ScreenHost, options: ScreenRouteOptions = {}): Hono {
  const interval = options.intervalMs ?? SCREEN_WATCH_INTERVAL_MS
  const heartbeat = options.heartbeatMs ?? SSE_HEARTBEAT_MS
  const app = new Hono()
  const one = '/v1/sessions/:sid/terminals/:tid'

  app.get(`${one}/screen`, async (c) => {
    const { sid, tid } = ids(c)
    const { emulator } = await host.live(sid, tid)
    return c.json(await emulator.request<ScreenProjection>(SCREEN_TEXT))
  })

  app.get(`${one}/screen/watch`, async (c) => {
    const { sid, tid } = ids(c)
    const { emulator, journal } = await host.live(sid, tid)
    // Subscribed before the first projection: nothing applied after it goes unnoticed. A watcher
    // keeps the screen in its emulator.
    const hold = emulator.hold()
    let dirty = false
    let wake: (() => void) | undefined
    const off = emulator.onApplied(() => {
      dirty = true
      wake?.()
    })
    let first: ScreenProjection
    try {
      first = await emulator.request<ScreenProjection>(SCREEN_TEXT)
    } catch (error) {
      off()
      hold()
      throw error
    }
    return streamSSE(c, async (stream) => {
      let aborted = false
      stream.onAbort(() => {
        aborted = true
        wake?.() // a quiet terminal's wait would otherwise hold this stream until the heartbeat
      })
      try {
        let last = first
        await stream.writeSSE({ event: 'screen', id: String(first.sequence), data: JSON.stringify(first) })
        let sentAt = Date.now()
        while (!aborted) {
          // The output ended and the last screen sent shows all of it: nothing will wake this loop.
          if (!dirty && journal.ended && emulator.caughtUp) {
            await stream.writeSSE({ event: 'closed', data: JSON.stringify({ sequence: last.sequence }) })
            return
          }
          if (!dirty) {
            const stop = new AbortController()
            const woke = await new Promise<boolean>((resolve) => {
              const timer = setTimeout(() => resolve(false), heartbeat)
              wake = () => {
                clearTimeout(timer)
                resolve(true)
              }
              // The output may end with nothing more to apply (the terminal was closed).
              void whenEnded(journal, stop.signal, () => wake?.())
            })
            stop.abort()
            wake = undefined
            if (!woke && !aborted) await stream.write(': heartbeat\n\n')
          }
          const wait = sentAt + interval - Date.now()
          if (wait > 0) await stream.sleep(wait)
          if (aborted) break
          dirty = false
          let next: ScreenProjection
          try {
            next = await emulator.request<ScreenProjection>(SCREEN_TEXT)
          } catch (error) {
            // The emulator's worker failed and the screen is being rebuilt: the terminal goes on,
            // so this stream waits for the rebuilt screen (one that cannot be rebuilt ends it
            // without `closed`: the output did not end).
            if (error instanceof TermkeepError && error.code === 'sidecar/unavailable' && !emulator.unavailable) {
              dirty = true
              await stream.sleep(interval)
              continue
            }
            if (emulator.unavailable) return
            await stream.writeSSE({ event: 'closed', data: JSON.stringify({ sequence: last.sequence }) })
            return
          }
          // A rebuilt screen replaying older output is not news.
          if (emulator.rebuilding || next.sequence < last.sequence) continue
          if (!sameText(next, last)) {
            last = next
            sentAt = Date.now()
            await stream.writeSSE({ event: 'screen', id: String(next.sequence), data: JSON.stringify(next) })
          }
          if (journal.ended && emulator.caughtUp && !dirty) {
            await stream.writeSSE({ event: 'closed', data: JSON.stringify({ sequence: next.sequence }) })
            return
          }
        }
      } finally {
        off()
        hold()
      }
    })
  })
  return app
}
