/**
 * The newest revision's lag at the moment of a crash (issue 27): three terminals flood SGR-coloured
 * lines, and CRASH_AT_S seconds into the flood the sidecar is killed with SIGKILL; what the
 * database holds then is what a crash keeps. Every 100 ms during the flood the journal's sequence of
 * each terminal is sampled (when each record arrived, to within one sample); after the kill, the
 * lag of a terminal is how long before the kill the first record its newest revision does not
 * cover arrived (p100 over every terminal of every round; target ≤ 5 s).
 */
import type { DisplayStats } from '../sidecar/display/service.ts'
import { openStorage } from '../storage/client.ts'
import type { RunningSidecar } from '../test/support/sidecar.ts'
import type { SidecarHttp } from '../test/support/terminals.ts'
import type { BenchRow } from './table.ts'
import { now, sleep } from './clock.ts'

const TERMINALS = 3
/** Seconds into the flood at which each round's sidecar is killed. */
const CRASH_AT_S = [3, 5.5, 8]
const SAMPLE_MS = 100

export interface CrashHarness {
  withSidecar<T>(
    scripts: Record<string, string>,
    run: (sidecar: RunningSidecar, http: SidecarHttp, path: (name: string) => string) => Promise<T>,
  ): Promise<T>
  create(http: SidecarHttp, id: string, shell: string): Promise<void>
}

export async function crashLag(file: string, harness: CrashHarness): Promise<BenchRow[]> {
  const lags: number[] = []
  const notes: string[] = []
  for (const crashAt of CRASH_AT_S) {
    const round = await harness.withSidecar({ flood: `cat ${file}\nexec sleep 600` }, async (sidecar, http, path) => {
      const keys = Array.from({ length: TERMINALS }, (_, i) => `s0/c${i}`)
      for (let i = 0; i < TERMINALS; i++) await harness.create(http, `c${i}`, path('flood'))
      // When each sequence was first seen: arrivals[key] = [time of the sample before, sequence].
      const arrivals = new Map<string, Array<[number, number]>>(keys.map((k) => [k, []]))
      const started = now()
      let previous = started
      while (now() - started < crashAt * 1000) {
        const s = (await http.json<DisplayStats>('GET', '/v1/display/stats')).body
        const at = now()
        for (const t of s.terminals) {
          const list = arrivals.get(t.key)
          if (list && (list.length === 0 || list[list.length - 1][1] < t.journalSequence)) list.push([previous, t.journalSequence])
        }
        previous = at
        await sleep(SAMPLE_MS)
      }
      const killedAt = now()
      await sidecar.kill()
      const storage = await openStorage({ url: sidecar.databaseUrl })
      try {
        const result: number[] = []
        for (const key of keys) {
          const [, terminal] = key.split('/')
          const { rows } = await storage.client.execute({
            sql: 'SELECT max(sequence) AS sequence FROM display_revisions WHERE session_id = ? AND terminal_id = ?',
            args: ['s0', terminal],
          })
          const persisted = Number(rows[0]?.sequence ?? 0)
          const firstMissing = arrivals.get(key)!.find(([, sequence]) => sequence > persisted)
          // Not covered: what arrived after the last sample, less than one sample before the kill.
          result.push(firstMissing ? killedAt - firstMissing[0] : Math.min(SAMPLE_MS, killedAt - previous))
        }
        return result
      } finally {
        storage.close()
      }
    })
    lags.push(...round)
    notes.push(`${crashAt} s: ${round.map((l) => (l / 1000).toFixed(2)).join('/')}`)
  }
  const worst = Math.max(...lags) / 1000
  return [
    {
      area: 'display',
      metric: `newest persisted revision's lag behind the journal at a SIGKILL during a ${TERMINALS}-terminal SGR-coloured flood (p100)`,
      value: worst,
      unit: 's',
      target: '≤ 5 s',
      met: worst <= 5,
      note: `${CRASH_AT_S.length} rounds, killed that long into the flood; lag per terminal in s: ${notes.join(', ')}`,
    },
  ]
}
