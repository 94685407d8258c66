/**
 * How soon a quiet screen is on disk (issue 27, item 5): thirty terminals, each with a coloured
 * history behind its prompt, are typed into at once, and every 10 ms the sidecar's display stats
 * say which of them has a revision written (committed) that covers its echo. Per terminal, the
 * time from its echo's arrival on its follow stream to that write; p100 over every terminal of
 * ROUNDS rounds against the promise, the settle time plus 250 ms. Then one round more, ended by a
 * SIGKILL of the sidecar at exactly that bound after the last echo: what the database holds then is
 * what a crash keeps, and every screen must show its echo.
 */
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import type { DisplayStats } from '../sidecar/display/service.ts'
import { SETTLE_WINDOW_MS } from '../sidecar/tuning.ts'
import { openStorage } from '../storage/client.ts'
import type { SidecarHttp, SseStream } from '../test/support/terminals.ts'
import type { MemoryHarness } from './display-memory.ts'
import type { BenchRow } from './table.ts'
import { now, sleep } from './clock.ts'

const TERMINALS = 30
const ROUNDS = 3
/** The promise beyond the settle time. */
const PERSIST_BOUND_MS = 250
const POLL_MS = 10
const HISTORY_LINES = 2_000

/** Each terminal's key and route. */
const terminal = (harness: MemoryHarness, i: number) => ({
  key: `${harness.sessionOf(i)}/q${i}`,
  route: `/v1/sessions/${harness.sessionOf(i)}/terminals/q${i}`,
  session: harness.sessionOf(i),
  id: `q${i}`,
})

/** Types a mark into every terminal at once; resolves with each echo's arrival time and sequence. */
async function typeMarks(
  http: SidecarHttp,
  routes: string[],
  follows: SseStream[],
): Promise<{ marks: string[]; echoes: Array<[number, number]> }> {
  const marks = routes.map((_, i) => `mark-${i}-${Math.random().toString(36).slice(2, 8)}`)
  const echoes: Array<[number, number]> = []
  const echoed = Promise.all(
    follows.map(async (follow, i) => {
      const event = await follow.until(
        (m) => m.event === 'output' && Buffer.from(m.data.data, 'base64').toString('latin1').includes(`got:${marks[i]}`),
      )
      echoes[i] = [now(), Number(event.id)]
    }),
  )
  const typed = await Promise.all(
    marks.map((mark, i) => http.fetch('POST', `${routes[i]}/input`, { body: `${mark}\n`, headers: { 'termkeep-attachment': `a${i}` } })),
  )
  if (typed.some((r) => r.status !== 204)) throw new Error(`input answered ${typed.map((r) => r.status).join(',')}`)
  await echoed
  return { marks, echoes }
}

export async function quietDurability(dir: string, harness: MemoryHarness): Promise<BenchRow[]> {
  const history = join(dir, 'durability-history.txt')
  let text = ''
  for (let i = 0; i < HISTORY_LINES; i++) text += `\x1b[3${(i % 7) + 1}mbuild step ${i}\x1b[0m ${'.'.repeat(i % 60)}\n`
  writeFileSync(history, text)
  const script = `cat ${history}; stty -echo; echo ready; while read line; do echo "got:$line"; done`
  return harness.withSidecar({ echoer: script }, {}, async (sidecar, http, path) => {
    const terminals = Array.from({ length: TERMINALS }, (_, i) => terminal(harness, i))
    for (const t of terminals) await harness.create(http, t.id, path('echoer'), t.session)
    const follows: SseStream[] = []
    try {
      for (const [i, t] of terminals.entries()) {
        const follow = await http.sse(`${t.route}/follow?attachment=a${i}`)
        follows.push(follow)
        await follow.until((m) => m.event === 'snapshot')
      }
      const stats = async () => (await http.json<DisplayStats>('GET', '/v1/display/stats')).body
      const settled = async () => {
        for (;;) {
          const s = await stats()
          if (
            s.terminals.length === TERMINALS &&
            s.terminals.every((t) => t.journalSequence > 0 && t.writtenSequence === t.journalSequence)
          )
            return
          await sleep(100)
        }
      }
      const routes = terminals.map((t) => t.route)
      const latencies: number[] = []
      for (let round = 0; round < ROUNDS; round++) {
        await settled()
        const { echoes } = await typeMarks(http, routes, follows)
        const pending = new Set(terminals.map((_, i) => i))
        while (pending.size > 0) {
          const s = await stats()
          const at = now()
          const written = new Map(s.terminals.map((t) => [t.key, t.writtenSequence]))
          for (const i of [...pending]) {
            if ((written.get(terminals[i].key) ?? 0) < echoes[i][1]) continue
            latencies.push(at - echoes[i][0])
            pending.delete(i)
          }
          await sleep(POLL_MS)
        }
      }
      await settled()
      const { marks, echoes } = await typeMarks(http, routes, follows)
      await sleep(Math.max(...echoes.map(([at]) => at)) + SETTLE_WINDOW_MS + PERSIST_BOUND_MS - now())
      await sidecar.kill()
      const missing = await withoutEcho(sidecar.databaseUrl, terminals, marks)
      const sorted = [...latencies].sort((a, b) => a - b)
      const worst = sorted[sorted.length - 1]!
      const bound = SETTLE_WINDOW_MS + PERSIST_BOUND_MS
      return [
        {
          area: 'display',
          metric: `a quiet screen's echo → its revision committed (p100 of ${TERMINALS} terminals typed into at once, ${ROUNDS} rounds)`,
          value: worst,
          unit: 'ms',
          target: `≤ ${bound} ms`,
          met: worst <= bound,
          note: `settle time ${SETTLE_WINDOW_MS} ms + ${PERSIST_BOUND_MS}; p50 ${sorted[Math.floor(sorted.length / 2)]!.toFixed(0)} ms; polled every ${POLL_MS} ms`,
        },
        {
          area: 'display',
          metric: `screens without their echo after a SIGKILL ${bound} ms after the last echo (of ${TERMINALS})`,
          value: missing.length,
          unit: 'screens',
          target: '0',
          met: missing.length === 0,
          note: missing.length ? `missing: ${missing.join(', ')}` : 'every newest revision shows its echo',
        },
      ]
    } finally {
      for (const follow of follows) follow.close()
    }
  })
}

/** The terminals whose newest revision in the database does not show their mark. */
async function withoutEcho(databaseUrl: string, terminals: Array<{ session: string; id: string }>, marks: string[]): Promise<string[]> {
  const storage = await openStorage({ url: databaseUrl })
  try {
    const missing: string[] = []
    for (const [i, t] of terminals.entries()) {
      const { rows } = await storage.client.execute({
        sql: `SELECT group_concat(body, '') AS text FROM display_chunks WHERE session_id = ? AND terminal_id = ?
              AND revision = (SELECT max(revision) FROM display_revisions WHERE session_id = ? AND terminal_id = ?)`,
        args: [t.session, t.id, t.session, t.id],
      })
      if (!String(rows[0]?.text ?? '').includes(`got:${marks[i]}`)) missing.push(t.id)
    }
    return missing
  } finally {
    storage.close()
  }
}
