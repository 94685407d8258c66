/**
 * `termkeep run` against the real Node API and sidecar: it streams a run's events, prints the
 * return value on stdout, exits 0 / 1 / 130 for completed / error / cancelled, and Ctrl-C (SIGINT)
 * cancels the run, closing its agents' terminals before the command exits. A start answered 503 by
 * a stalled sidecar (which starts the run as it resumes) is retried under its Idempotency-Key and
 * answered with that run: it runs once.
 */
import { spawn } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TermkeepClient } from '../../web/client/api.ts'
import { startStack, type Stack } from '../browser/stack.ts'
import { startStallProxy } from '../support/stall-proxy.ts'
import { AGENTS_ENV, processesOfRun } from '../workflows/support.ts'
import { BIN, runCli } from './run.ts'

let stack: Stack
let env: Record<string, string>
let dir: string

const cli = (args: string[]) => runCli(args, env)

/** The run the command started (its id is in the first line) has a valid, ended log. */
async function expectValidLog(stderr: string): Promise<void> {
  const rid = /run (wf_\S+) started/.exec(stderr)?.[1]
  expect(rid, stderr).toBeDefined()
  const client = new TermkeepClient({ url: stack.api.url, token: stack.token })
  const detail = await client.workflow('s1', rid!)
  expect(detail.log).toEqual({ valid: true })
  expect(detail.result).not.toBeNull()
}

function script(name: string, body: string): string {
  const file = join(dir, name)
  writeFileSync(file, body)
  return file
}

beforeAll(async () => {
  stack = await startStack('cli-run', { sidecarEnv: AGENTS_ENV })
  env = { TERMKEEP_URL: stack.api.url, TERMKEEP_TOKEN: stack.token }
  dir = mkdtempSync(join(tmpdir(), 'termkeep-run-scripts-'))
  const client = new TermkeepClient({ url: stack.api.url, token: stack.token })
  await client.createWorkspace(stack.workspaceDir)
  await client.request('POST', '/v1/sessions', { json: { id: 's1', cwd: stack.workspaceDir } })
}, 60_000)
afterAll(async () => {
  await stack?.stop()
})

describe('termkeep run', () => {
  it('retries a start the stalled sidecar carried out after answering 503, and the run starts once', async () => {
    const client = new TermkeepClient({ url: stack.api.url, token: stack.token })
    const before = (await client.workflows('s1', { limit: 100 })).runs.map((r) => r.id)
    const proxy = await startStallProxy(stack.api.url, () => stack.sidecar.pid)
    try {
      proxy.stallNext((request) => request.method === 'POST' && request.url!.endsWith('/workflows'))
      const file = script('once.js', "log('started once')\nreturn 'once'\n")
      const result = await runCli(['run', 's1', file], { ...env, TERMKEEP_URL: proxy.url })
      expect(result.code, result.stderr).toBe(0)
      expect(JSON.parse(result.stdout)).toBe('once')
      const stalled = await proxy.stalled()
      expect(stalled.status).toBe(503)
      const attempts = proxy.passed.filter((p) => p.method === 'POST' && p.path.endsWith('/workflows'))
      expect(new Set(attempts.map((p) => p.key))).toEqual(new Set([stalled.key]))
      // 200 (the run the stalled attempt started), or 201 if the retry reached the resumed
      // sidecar first and the stalled attempt joined it: either way one run.
      expect([200, 201]).toContain(attempts.at(-1)?.status)
      const started = (await client.workflows('s1', { limit: 100 })).runs.filter((r) => !before.includes(r.id))
      expect(started).toHaveLength(1)
      expect(result.stderr).toContain(`run ${started[0].id} started`)
    } finally {
      await proxy.close()
    }
  })

  it('streams the events, prints the value on stdout and exits 0 when the run completes', async () => {
    const file = script('ok.js', "log('hello', input.who)\nreturn await parallel(['a [result]', 'b [exit:4]'], (p) => agent(p))\n")
    const result = await cli(['run', 's1', file, '--input', '{"who":"cli"}'])
    expect(result.code, result.stderr).toBe(0)
    expect(JSON.parse(result.stdout)).toEqual(['result: a', null])
    const lines = result.stderr.trim().split('\n')
    expect(lines[0]).toMatch(/^termkeep: run wf_\S+ started in session s1/)
    expect(lines).toContain('[log] hello cli')
    expect(lines.filter((l) => /^\[agent [12]\] started: [ab] /.test(l))).toHaveLength(2)
    expect(lines).toContain('[agent 2] failed (exit 4)')
    expect(lines.at(-1)).toBe('[run] completed (2 agents)')
    await expectValidLog(result.stderr)
  })

  it('exits 1 with the reason when the run fails, and --json prints every event as a line', async () => {
    const failing = await cli(['run', 's1', script('bad.js', "await agent('x', { modle: 'y' })")])
    expect(failing.code).toBe(1)
    expect(failing.stderr).toContain('[run] error: UNSUPPORTED_OPTION: agent() has no option "modle"')
    await expectValidLog(failing.stderr)
    const json = await cli(['run', 's1', script('json.js', "log('one'); return 7"), '--json'])
    expect(json.code).toBe(0)
    const events = json.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line))
    expect(events.map((e) => [e.id, e.event])).toEqual([
      [1, 'workflow/start'],
      [2, 'workflow/log'],
      [3, 'workflow/end'],
    ])
    expect(events[2].data.result.value).toBe(7)
  })

  it('refuses a script that does not parse, an unreadable file and bad --input, in one line', async () => {
    const parse = await cli(['run', 's1', script('syntax.js', 'return (')])
    expect([parse.code, parse.stderr.trim()]).toEqual([
      1,
      expect.stringMatching(/^termkeep: the script does not parse: .*\(workflow\/invalid-script\)$/),
    ])
    const missing = await cli(['run', 's1', join(dir, 'nope.js')])
    expect([missing.code, missing.stderr.trim()]).toEqual([1, `termkeep: cannot read the script ${join(dir, 'nope.js')} (ENOENT)`])
    const input = await cli(['run', 's1', script('i.js', 'return 1'), '--input', '{bad'])
    expect(input.code).toBe(2)
    expect(input.stderr).toContain('--input takes JSON')
  })

  it('cancels the run on Ctrl-C, waits for its agents to be closed, and exits 130', async () => {
    const child = spawn(
      process.execPath,
      [BIN, 'run', 's1', script('hang.js', "return await parallel(['p [hang]', 'q [hang]'], (p) => agent(p))")],
      {
        env: { ...process.env, ...env },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const exited = new Promise<number>((resolve) => child.once('exit', (code) => resolve(code ?? -1)))
    const started = () => (stderr.match(/\[agent \d\] started/g) ?? []).length === 2
    for (let waited = 0; !started() && waited < 30_000; waited += 50) await new Promise((r) => setTimeout(r, 50))
    expect(started(), stderr).toBe(true)
    const rid = /run (wf_\S+) started/.exec(stderr)![1]
    expect(processesOfRun(rid).length).toBeGreaterThan(0)
    child.kill('SIGINT')
    expect(await exited, stderr).toBe(130)
    expect(stderr).toContain('[agent 1] cancelled')
    expect(stderr).toContain('[run] cancelled: Ctrl-C in termkeep run (2 agents)')
    expect(processesOfRun(rid)).toEqual([])
    await expectValidLog(stderr)
  })
})
