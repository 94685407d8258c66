/**
 * An emulator worker that dies (a bug, memory) takes no terminal with it: the sidecar rebuilds
 * each of its screens in another worker from the output journal, so the screen, a new follow's
 * snapshot and the settled display carry on. The crash is real: a preload makes the worker throw.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStorage } from '../../../storage/client.ts'
import { waitFor } from '../../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../../support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp, type SseStream } from '../../support/terminals.ts'

const CRASH = new URL('../../support/crash-emulator-workers.mjs', import.meta.url).pathname
const shells = shellsFixture({ echoer: 'stty -echo; echo ready; while read line; do echo "got:$line"; done' })
const T = '/v1/sessions/s-crash/terminals/t'
let sidecar: RunningSidecar
let http: SidecarHttp
let log = ''
const streams: SseStream[] = []

const screen = async () => {
  const { status, body } = await http.json('GET', `${T}/screen`)
  return status === 200 ? JSON.stringify(body) : `(${status})`
}

beforeAll(async () => {
  sidecar = await startSidecar({ env: { TERMKEEP_SHELLS_FILE: shells.shellsFile }, nodeArgs: ['--import', CRASH] })
  sidecar.child.stderr?.on('data', (c: Buffer) => (log += c.toString()))
  http = new SidecarHttp(sidecar)
  await insertSession(sidecar.databaseUrl, 's-crash', shells.dir)
})
afterAll(async () => {
  for (const stream of streams) stream.close()
  await sidecar?.stop()
})

describe('an emulator worker that crashes', () => {
  it('has its screens rebuilt from the journal; the terminal and its display carry on', async () => {
    expect((await http.json('PUT', T, { json: { cols: 80, rows: 24, shell: shells.path('echoer') } })).status).toBe(201)
    const ctl = await http.sse(`${T}/follow?attachment=a`)
    streams.push(ctl)
    await ctl.until((m) => m.event === 'snapshot')
    const type = (text: string) => http.fetch('POST', `${T}/input`, { body: text, headers: { 'termkeep-attachment': 'a' } })
    expect((await type('before\n')).status).toBe(204)
    await waitFor(async () => (await screen()).includes('got:before'), 10_000, 'the screen before the crash')

    const watch = await http.sse(`${T}/screen/watch`)
    streams.push(watch)
    await watch.until((m) => m.event === 'screen' && JSON.stringify(m.data).includes('got:before'))

    process.kill(sidecar.pid, 'SIGUSR2')
    await waitFor(async () => log.includes('emulator worker failed'), 10_000, 'the failure to be noticed')
    expect(log).toMatch(/\[fault injection\] crashing [1-9]/)
    // Rebuilt from the journal: the screen shows what was printed before the crash, and more.
    await waitFor(async () => (await screen()).includes('got:before'), 10_000, 'the rebuilt screen')
    expect((await type('after\n')).status).toBe(204)
    await waitFor(async () => (await screen()).includes('got:after'), 10_000, 'the screen after the crash')
    // The screen watch goes on through the rebuild: no `closed`, never an older screen.
    const events: Array<{ event: string; data: any }> = []
    await watch.until((m) => {
      events.push(m)
      return m.event === 'closed' || (m.event === 'screen' && JSON.stringify(m.data).includes('got:after'))
    })
    expect(events.map((m) => m.event)).not.toContain('closed')
    const sequences = events.filter((m) => m.event === 'screen').map((m) => m.data.sequence as number)
    expect(sequences).toEqual([...sequences].sort((a, b) => a - b))
    const again = await http.sse(`${T}/follow?attachment=b`)
    streams.push(again)
    const snapshot = await again.until((m) => m.event === 'snapshot')
    expect(snapshot.data.screen).toMatch(/got:before[\s\S]*got:after/)
    // Settled revisions keep coming: the persisted display shows the output after the crash.
    const storage = await openStorage({ url: sidecar.databaseUrl })
    try {
      await waitFor(
        async () => {
          const { rows } = await storage.client.execute(
            "SELECT group_concat(body, '') AS text FROM display_chunks WHERE terminal_id = 't' AND revision = (SELECT max(revision) FROM display_revisions WHERE terminal_id = 't')",
          )
          return String(rows[0]?.text ?? '').includes('got:after')
        },
        10_000,
        'a settled display with the output after the crash',
      )
    } finally {
      storage.close()
    }
    expect((await http.json('GET', T)).body.state).toBe('running')
  })
})
