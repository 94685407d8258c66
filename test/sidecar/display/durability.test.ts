/**
 * A quiet screen is on disk soon after it settles: thirty terminals, each with a history behind
 * its prompt, are typed into at once; SETTLE_WINDOW_MS + PERSIST_BOUND_MS after the last echo came
 * back the sidecar is killed with SIGKILL, and every terminal's newest revision in the database
 * must show its own echo. A real sidecar, real PTYs, a real crash. The tighter 250 ms target is
 * measured, not asserted here (docs/display.md, "At a crash"): a timed bound that tight fails on
 * a loaded machine for reasons outside the code under test.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SETTLE_WINDOW_MS } from '../../../sidecar/tuning.ts'
import { openStorage } from '../../../storage/client.ts'
import { waitFor } from '../../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../../support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp, type SseStream } from '../../support/terminals.ts'

const TERMINALS = 30
/** The bound under test, with room for a loaded CI machine: 23 of 30 screens missed it before the group commit. */
const PERSIST_BOUND_MS = 2_000

const dir = mkdtempSync(join(tmpdir(), 'termkeep-durability-'))
const history = join(dir, 'history.txt')
let text = ''
for (let i = 0; i < 2_000; i++) text += `\x1b[3${(i % 7) + 1}mbuild step ${i}\x1b[0m ${'.'.repeat(i % 60)}\n`
writeFileSync(history, text)
const shells = shellsFixture({ echoer: `cat ${history}; stty -echo; echo ready; while read line; do echo "got:$line"; done` })
const streams: SseStream[] = []
let sidecar: RunningSidecar | undefined

afterAll(async () => {
  for (const stream of streams) stream.close()
  await sidecar?.stop()
  rmSync(shells.dir, { recursive: true, force: true })
  rmSync(dir, { recursive: true, force: true })
})

const path = (i: number) => `/v1/sessions/s${Math.floor(i / 16)}/terminals/t${i}`

describe('a quiet screen at a crash', () => {
  it('is persisted within its settle time plus 2 s, for thirty screens typed at once', async () => {
    sidecar = await startSidecar({ env: { TERMKEEP_SHELLS_FILE: shells.shellsFile } })
    const http = new SidecarHttp(sidecar)
    for (let s = 0; s * 16 < TERMINALS; s++) await insertSession(sidecar.databaseUrl, `s${s}`, dir)
    for (let i = 0; i < TERMINALS; i++) {
      const created = await http.json('PUT', path(i), { json: { cols: 80, rows: 24, shell: shells.path('echoer') } })
      expect(created.status).toBe(201)
    }
    for (let i = 0; i < TERMINALS; i++) {
      const follow = await http.sse(`${path(i)}/follow?attachment=a${i}`)
      streams.push(follow)
      await follow.until((m) => m.event === 'snapshot')
    }
    // Every prompt is up and its screen settled and written.
    await waitFor(
      async () => {
        const { body } = await http.json('GET', '/v1/display/stats')
        const terminals = body.terminals as Array<{ journalSequence: number; writtenSequence: number }>
        return terminals.length === TERMINALS && terminals.every((t) => t.journalSequence > 0 && t.writtenSequence === t.journalSequence)
      },
      60_000,
      'every screen settled',
    )
    const marks = Array.from({ length: TERMINALS }, (_, i) => `mark-${i}-${Math.random().toString(36).slice(2, 8)}`)
    const echoed = Promise.all(
      streams.map((follow, i) =>
        follow.until((m) => m.event === 'output' && Buffer.from(m.data.data, 'base64').toString('latin1').includes(`got:${marks[i]}`)),
      ),
    )
    const typed = await Promise.all(
      marks.map((mark, i) => http.fetch('POST', `${path(i)}/input`, { body: `${mark}\n`, headers: { 'termkeep-attachment': `a${i}` } })),
    )
    expect(typed.map((r) => r.status)).toEqual(marks.map(() => 204))
    await echoed
    await new Promise((resolve) => setTimeout(resolve, SETTLE_WINDOW_MS + PERSIST_BOUND_MS))
    await sidecar.kill()
    const storage = await openStorage({ url: sidecar.databaseUrl })
    try {
      const missing: string[] = []
      for (let i = 0; i < TERMINALS; i++) {
        const { rows } = await storage.client.execute({
          sql: `SELECT group_concat(body, '') AS text FROM display_chunks WHERE session_id = ? AND terminal_id = ?
                AND revision = (SELECT max(revision) FROM display_revisions WHERE session_id = ? AND terminal_id = ?)`,
          args: [`s${Math.floor(i / 16)}`, `t${i}`, `s${Math.floor(i / 16)}`, `t${i}`],
        })
        if (!String(rows[0]?.text ?? '').includes(`got:${marks[i]}`)) missing.push(`t${i}`)
      }
      expect(missing).toEqual([])
    } finally {
      storage.close()
    }
  })
})
