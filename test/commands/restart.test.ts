/**
 * Command records survive the sidecar: a command running when the sidecar stops is ended in its
 * record before it exits; one running when the sidecar is killed is ended by the next sidecar's
 * start. Either way the records and their text stay readable through the API (from the database).
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { startSidecar } from '../support/sidecar.ts'
import { Commands } from './support.ts'

let c: Commands
beforeAll(async () => {
  c = await Commands.start('restart')
}, 60_000)
afterAll(async () => {
  await c?.stop()
})

async function restart(crash: boolean): Promise<void> {
  const old = c.stack.sidecar
  await (crash ? old.kill() : old.stop())
  c.stack.sidecar = await startSidecar({
    dataDir: old.dataDir,
    databaseUrl: old.databaseUrl,
    secret: old.secret,
    port: Number(new URL(old.url).port),
    env: { SHELL: '/bin/bash', HOME: c.home },
  })
}

test('a running command is ended in its record by a stop, and by the start after a crash', async () => {
  for (const crash of [false, true]) {
    const tid = crash ? 'killed' : 'stopped'
    await c.open(tid, '/usr/bin/bash')
    expect((await c.run(tid, 'echo before')).body.text).toBe('before')
    const running = await c.run(tid, 'sleep 100', 200)
    expect(running.body).toMatchObject({ ended: false, command: { n: 2, state: 'running' } })
    if (crash) expect((await c.call('GET', `${c.terminal(tid)}/commands/2`)).body.state).toBe('running')
    await restart(crash)
    const record = await c.call('GET', `${c.terminal(tid)}/commands/2`)
    expect(record.body).toMatchObject({ n: 2, command: 'sleep 100', state: 'ended', exitCode: null })
    expect((await c.call('GET', `${c.terminal(tid)}/commands/1/output`)).body.text).toBe('before')
    expect((await c.call('GET', c.terminal(tid))).body.state).toBe('retired')
  }
})
