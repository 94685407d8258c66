/**
 * Commands and names from the CLI (`node cli/bin.js …` against the real stack): `new -s NAME -n
 * NAME`, terminals numbered 1, 2, 3 … per session, `exec` by name or number exiting with the
 * command's exit code, `send api:2`, `output --command N`, and the errors for a name not found or ambiguous.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { runCli } from '../cli/run.ts'
import { waitFor } from '../support/ports.ts'
import { Commands } from './support.ts'

let c: Commands
let env: Record<string, string>
beforeAll(async () => {
  c = await Commands.start('cli')
  env = { TERMKEEP_URL: c.stack.api.url, TERMKEEP_TOKEN: c.stack.token }
}, 60_000)
afterAll(async () => {
  await c?.stop()
})

test('new -s NAME, numbered terminals, exec and output --command by name', async () => {
  const first = await runCli(['new', '-s', 'api', '--cwd', c.stack.workspaceDir, '--shell', '/usr/bin/bash', '--detached'], env)
  expect(first.code, first.stderr).toBe(0)
  const [sid, tid] = first.stdout.trim().split(' ')
  expect(tid).toBe('1')
  const second = await runCli(['new', '--session', 'api', '-n', 'build', '--shell', '/usr/bin/bash', '--detached'], env)
  expect(second.stdout.trim()).toBe(`${sid} 2`)
  const info = await c.call('GET', `/v1/sessions/${sid}/terminals/2`)
  expect(info.body.name).toBe('build')

  const exec = await runCli(['exec', 'api:build', '--', 'cd', '/tmp', '&&', 'echo', 'made;', '(exit 3)'], env)
  expect([exec.code, exec.stdout]).toEqual([3, 'made\n'])
  const again = await runCli(['exec', 'api', '2', '--', 'pwd'], env)
  expect([again.code, again.stdout]).toEqual([0, '/tmp\n'])
  // A session alone is its newest live terminal: 2.
  expect((await runCli(['exec', 'api', '--', 'echo $((6 * 7))'], env)).stdout).toBe('42\n')
  const one = await runCli(['output', 'api:build', '--command', '1'], env)
  expect([one.code, one.stdout]).toEqual([0, 'made\n'])
  const raw = await runCli(['output', `${sid}:2`, '--command', '1', '--raw'], env)
  expect(raw.stdout).toContain('made\r\n')
  // send takes the same targets: typed into terminal 2, it is that shell's next command.
  const sent = await runCli(['send', 'api:2', 'echo sent-by-name', '--key', 'Enter'], env)
  expect(sent.code, sent.stderr).toBe(0)
  const typed = await waitFor(
    async () => {
      const list = await c.call('GET', `/v1/sessions/${sid}/terminals/2/commands`)
      return list.body.commands.find((r: { command: string; state: string }) => r.command === 'echo sent-by-name' && r.state === 'ended')
    },
    10_000,
    'the sent command',
  )
  expect((await runCli(['output', 'api:2', '--command', String(typed.n)], env)).stdout).toBe('sent-by-name\n')
  const ls = await runCli(['ls'], env)
  expect(ls.stdout).toContain(`session ${sid}  (api)`)
  expect(ls.stdout).toMatch(/^ {4}2 {2}\(build\) {2}running/m)
})

test('a name not found, or ambiguous, is said so; exec refusals exit 1', async () => {
  const missing = await runCli(['exec', 'nosuch:1', '--', 'true'], env)
  expect(missing.code).toBe(1)
  expect(missing.stderr).toContain('no session is named nosuch')
  const noTerminal = await runCli(['exec', 'api:nosuch', '--', 'true'], env)
  expect(noTerminal.stderr).toContain('no terminal is named nosuch')
  // An id chosen later that is another session's name makes that name ambiguous.
  expect((await c.call('POST', '/v1/sessions', { json: { id: 'api', cwd: c.stack.workspaceDir } })).status).toBe(201)
  const ambiguous = await runCli(['exec', 'api:1', '--', 'true'], env)
  expect(ambiguous.code).toBe(1)
  expect(ambiguous.stderr).toContain('(name/ambiguous)')
  expect(ambiguous.stderr).toContain('api is the id of one session and the name of another')
  // Naming a session after another's id, or taking a used name, is refused.
  const taken = await c.call('POST', '/v1/sessions', { json: { cwd: c.stack.workspaceDir, name: 'api' } })
  expect([taken.status, taken.body.error.code]).toEqual([409, 'name/conflict'])
  const bad = await c.call('PATCH', '/v1/sessions/api', { json: { name: '1st' } })
  expect([bad.status, bad.body.error.code]).toEqual([400, 'request/invalid'])
  const usage = await runCli(['exec', 'a', 'b', 'c', '--', 'true'], env)
  expect(usage.code).toBe(2)
})

test('exec exits 124 when the command outlives --timeout', async () => {
  const sid = (await c.call('GET', '/v1/resolve?target=cli-only')).body
  expect(sid.error.code).toBe('session/not-found')
  const { body } = await c.call('POST', '/v1/sessions', { json: { cwd: c.stack.workspaceDir, name: 'slow' } })
  await c.call('PUT', `/v1/sessions/${body.session.id}/terminals/1`, { json: { shell: '/usr/bin/bash', cols: 80, rows: 24 } })
  const slow = await runCli(['exec', 'slow', '--timeout', '0.3', '--', 'sleep 2'], env)
  expect(slow.code).toBe(124)
  expect(slow.stderr).toContain('still runs')
})
