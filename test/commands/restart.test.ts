/**
 * Command records across restarts. The terminals live in the keeper: a command running when the
 * sidecar stops or is killed runs on, its record stays running, and the next sidecar (which
 * adopts the terminal, derives its shell's nonce again and reads its marks from the keeper's
 * journal) records its end and the commands after it. A command running when the keeper itself
 * ends is ended in its record (no exit code): by the sidecar that sees the keeper go, or by the
 * next sidecar's start when none ran. Either way the records and their text stay readable through
 * the API (from the database).
 */
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { stopKeeper } from '../support/keepers.ts'
import { waitFor } from '../support/ports.ts'
import { startSidecar } from '../support/sidecar.ts'
import { Commands } from './support.ts'

let c: Commands
beforeAll(async () => {
  c = await Commands.start('restart')
}, 60_000)
afterAll(async () => {
  await c?.stop()
})

/** The sidecar goes (`stop`: SIGTERM, the keeper left running; `crash`: SIGKILL; `stop-all`:
 * SIGTERM and the keeper after it) and a new one starts on the same data directory. */
async function restart(how: 'stop' | 'crash' | 'stop-all'): Promise<void> {
  const old = c.stack.sidecar
  if (how === 'crash') await old.kill()
  else await old.stop({ terminals: how === 'stop' ? 'keep' : 'end' })
  c.stack.sidecar = await startSidecar({
    dataDir: old.dataDir,
    databaseUrl: old.databaseUrl,
    secret: old.secret,
    port: Number(new URL(old.url).port),
    env: { SHELL: '/bin/bash', HOME: c.home },
  })
}

/** Opens a bash with one ended command and one waiting for `go` (a file) to be made. */
async function twoCommands(tid: string): Promise<string> {
  await c.open(tid, '/usr/bin/bash')
  expect((await c.run(tid, 'echo before')).body.text).toBe('before')
  const go = join(c.home, `go-${tid}`)
  const running = await c.run(tid, `until [ -e ${go} ]; do sleep 0.1; done; echo finished`, 200)
  expect(running.body).toMatchObject({ ended: false, command: { n: 2, state: 'running' } })
  return go
}

const record = async (tid: string, n: number) => (await c.call('GET', `${c.terminal(tid)}/commands/${n}`)).body

test('a command runs on across a stop and a crash of the sidecar; the adopting sidecar records its end and new commands', async () => {
  for (const how of ['stop', 'crash'] as const) {
    const tid = how === 'crash' ? 'killed' : 'stopped'
    const go = await twoCommands(tid)
    await restart(how)
    expect((await c.call('GET', c.terminal(tid))).body).toMatchObject({ state: 'running', commandMarks: 'injected' })
    expect(await record(tid, 2)).toMatchObject({ n: 2, state: 'running', exitCode: null })
    writeFileSync(go, '')
    await waitFor(async () => (await record(tid, 2)).state === 'ended', 20_000, `the end of command 2 in ${tid}`)
    expect(await record(tid, 2)).toMatchObject({ n: 2, state: 'ended', exitCode: 0 })
    expect((await c.call('GET', `${c.terminal(tid)}/commands/2/output`)).body.text).toBe('finished')
    expect((await c.run(tid, 'echo after')).body).toMatchObject({ ended: true, text: 'after', command: { n: 3, exitCode: 0 } })
    expect((await c.call('GET', `${c.terminal(tid)}/commands/1/output`)).body.text).toBe('before')
  }
})

test('a command running when the keeper ends is ended in its record, with no exit code', async () => {
  // The keeper ends while the sidecar runs (it sees it go), then while none runs (the next start).
  for (const how of ['keeper', 'stop-all'] as const) {
    const tid = `gone-${how}`
    const go = await twoCommands(tid)
    if (how === 'keeper') {
      await stopKeeper(c.stack.sidecar.dataDir)
      await waitFor(async () => (await record(tid, 2)).state === 'ended', 20_000, `the end of command 2 in ${tid}`)
    } else {
      await restart(how)
    }
    expect(existsSync(go)).toBe(false)
    expect(await record(tid, 2)).toMatchObject({ n: 2, command: expect.stringContaining('until'), state: 'ended', exitCode: null })
    expect((await c.call('GET', `${c.terminal(tid)}/commands/1/output`)).body.text).toBe('before')
    await waitFor(async () => (await c.call('GET', c.terminal(tid))).body.state === 'retired', 10_000, `${tid} retired`)
  }
})
