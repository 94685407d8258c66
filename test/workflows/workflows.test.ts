/**
 * Workflow runs end to end: the real sidecar runs each script in its own confined process, every
 * agent() call runs the fake agent (test/fixtures/fake-agent.mjs) in a real PTY terminal of the
 * session, and the API serves runs and events from libSQL. Every run's log is checked with the
 * invariant checker, as streamed and as stored.
 */
import { readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promptProblem } from '../../sidecar/workflows/prompt.ts'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { json, readEvents, startHarness, type Harness } from '../api/harness.ts'
import { createToken } from '../../storage/tokens.ts'
import { processStat } from '../../local/proc.ts'
import {
  AGENTS_ENV,
  alive,
  endOf,
  eventsPath,
  eventually,
  expectValidLog,
  followTerminal,
  prepare,
  processesOfRun,
  runEvents,
  startRun,
} from './support.ts'

let h: Harness
let token: string
let workspace: string

beforeAll(async () => {
  h = await startHarness({ sidecarEnv: AGENTS_ENV })
  ;({ token, workspace } = await prepare(h))
  writeFileSync(join(workspace, 'notes.txt'), 'one\ntwo\nthree\n')
}, 60_000)
afterAll(async () => {
  await h?.close()
})

async function run(body: Record<string, unknown>) {
  const started = await startRun(h, token, body)
  const events = await runEvents(h, token, started.id)
  await expectValidLog(h, token, started.id, events)
  return { id: started.id as string, events, result: endOf(events) }
}

async function terminalsOf(rid: string): Promise<any[]> {
  const { terminals } = (await (await h.request('GET', '/v1/sessions/s1/terminals', { token })).json()) as any
  return terminals.filter((t: any) => t.workflow?.run === rid)
}

describe('combinators', () => {
  it('parallel of 3 with one failing member gives [text, null, text]; each member is a listed, closed terminal', async () => {
    const { id, events, result } = await run({
      script: "return await parallel(['one [result]', 'two [exit:3]', 'three'], (prompt) => agent(prompt))",
    })
    // A result file is the text; without one, the agent's screen is.
    expect(result).toEqual({ stopReason: 'completed', value: ['result: one', null, 'fake-agent got: three'], agentsStarted: 3 })
    const ends = events.filter((e) => e.event === 'workflow/agent-end').map(json)
    expect(ends.map((e) => [e.seq, e.outcome, e.exitCode]).sort()).toEqual([
      [1, 'completed', 0],
      [2, 'failed', 3],
      [3, 'completed', 0],
    ])
    const terminals = await terminalsOf(id)
    expect(terminals.map((t) => [t.workflow.seq, t.state, t.exitCode, t.cols]).sort()).toEqual([
      [1, 'retired', 0, 120],
      [2, 'retired', 3, 120],
      [3, 'retired', 0, 120],
    ])
    const detail = (await (await h.request('GET', `/v1/sessions/s1/workflows/${id}`, { token })).json()) as any
    expect(detail.members.map((m: any) => [m.seq, m.state, m.label])).toEqual([
      [1, 'completed', 'one [result]'],
      [2, 'failed', 'two [exit:3]'],
      [3, 'completed', 'three'],
    ])
    // Each member's last screen was persisted: its display reads from the database after retirement.
    const display = await h.request('GET', `/v1/sessions/s1/terminals/${terminals[0].id}/display`, { token })
    expect(display.status).toBe(200)
    await display.body?.cancel()
  })

  it('pipeline of two stages moves each item through both, stage two seeing stage one and the item', async () => {
    const script = `
      return await pipeline(['a', 'b [exit:1]', 'c'],
        (item) => agent('plan ' + item + ' [result]'),
        (plan, item, index) => agent('do ' + index + ' ' + plan + ' [result]', { label: 'do ' + item }))`
    const { result, events } = await run({ script })
    // b's first stage failed only because its text carries [exit:1] into stage one's agent: null,
    // and its second stage never ran.
    expect(result.value).toEqual(['result: do 0 result: plan a', null, 'result: do 2 result: plan c'])
    const labels = events.filter((e) => e.event === 'workflow/agent-start').map((e) => json(e).label)
    expect(labels.filter((l) => l.startsWith('do ')).sort()).toEqual(['do a', 'do c'])
    expect(result.agentsStarted).toBe(5)
  })

  it('a stage or item that throws an ordinary error becomes null; parallel takes thunks too', async () => {
    const script = `
      const mapped = await parallel([1, 2, 3], (n) => { if (n === 2) throw new Error('no'); return n * 10 })
      const thunks = await parallel([() => 'x', () => agent('y [result]')])
      const piped = await pipeline([1, 2], (n) => n + 1, (n) => { if (n === 3) throw new TypeError('odd'); return n })
      return { mapped, thunks, piped }`
    const { result } = await run({ script })
    expect(result.value).toEqual({ mapped: [10, null, 30], thunks: ['x', 'result: y'], piped: [2, null] })
  })

  it('a script that returns without awaiting its agents ends with them cancelled, none left behind', async () => {
    const { id, result, events } = await run({ script: "agent('forgotten [hang]'); agent('queued too'); return 'early'" })
    expect(result).toEqual({ stopReason: 'completed', value: 'early', agentsStarted: 2 })
    // Both had been started when the script returned: each is closed and ended cancelled.
    expect(events.filter((e) => e.event === 'workflow/agent-start')).toHaveLength(2)
    expect(events.filter((e) => e.event === 'workflow/agent-end').map((e) => json(e).outcome)).toEqual(['cancelled', 'cancelled'])
    expect(processesOfRun(id)).toEqual([])
  })

  it('agent() resolves with the member: stopReason, text, exitCode, terminal, seq', async () => {
    const { id, result } = await run({ script: "const r = await agent('solo [exit:2]'); return r" })
    expect(result.value).toMatchObject({ stopReason: 'error', exitCode: 2, terminal: `${id}-1`, seq: 1, truncated: false })
    expect(result.value.text).toContain('fake-agent got: solo [exit:2]')
  })
})

describe('failure discipline', () => {
  it('a misspelled agent() option is fatal: the run errs naming it, and no member starts after it', async () => {
    const script = `
      await agent('first [result]')
      try { await agent('second', { lable: 'x' }) } catch (e) { log('caught', e.code, e.fatal) }
      await agent('third')
      return 'unreachable'`
    const { events, result } = await run({ script })
    expect(result.stopReason).toBe('error')
    expect(result.error).toMatch(/^UNSUPPORTED_OPTION: agent\(\) has no option "lable"/)
    expect(result.value).toBeUndefined()
    expect(events.filter((e) => e.event === 'workflow/agent-start')).toHaveLength(1)
    expect(events.filter((e) => e.event === 'workflow/log').map((e) => json(e).message)).toEqual(['caught UNSUPPORTED_OPTION true'])
    expect(result.agentsStarted).toBe(1)
  })

  it('parallel and pipeline rethrow a fatal error instead of mapping it to null', async () => {
    for (const script of [
      "return await parallel(['a', 'b'], (p) => agent(p, { promt: 1 }))",
      "return await pipeline(['a'], (p) => p, (p) => agent(p, { profile: 'nope' }))",
      'return await parallel(Array.from({ length: 4097 }, () => 1), (n) => n)',
    ]) {
      const { result } = await run({ script })
      expect(result.stopReason, script).toBe('error')
    }
    const { result } = await run({ script: "return await parallel(['a'], (p) => agent(p, { profile: 'nope' }))" })
    expect(result.error).toBe('UNKNOWN_PROFILE: no agent profile "nope" (configured: default, stdin, env) (line 1, column 42)')
  })

  it('a script error, a non-JSON return value and hook misuse end the run as error with the reason', async () => {
    const cases: [string, RegExp][] = [
      ["throw new RangeError('bad')", /^RangeError: bad/],
      ['return { when: new Date(0) }', /^RESULT_UNSERIALIZABLE: .*Date/],
      ['return [1, undefined]', /^RESULT_UNSERIALIZABLE: .*undefined at 1/],
      ['log("x".repeat(20000))', /^LOG_CAP: one log message/],
      ['await agent(42)', /^INVALID_ARGUMENT: agent\(prompt/],
      ['readText(7)', /^INVALID_ARGUMENT: readText/],
      // Arguments too large to cross to the host are refused before they do (the run did not end on its channel's bound).
      ["await agent('x', { label: 'l'.repeat(5e6) })", /^INVALID_ARGUMENT: agent\(\) option "label": agent labels are at most/],
      ["await readText('x'.repeat(5e6))", /^INVALID_ARGUMENT: readText\(address\): the address is at most 65536 bytes/],
      ["await readText({ address: 'a', offset: 'x'.repeat(5e6) })", /^INVALID_ARGUMENT: readText\(address\)/],
      ['return typeof require + typeof process + typeof setTimeout + typeof fetch', /^$/],
    ]
    for (const [script, error] of cases.slice(0, -1)) {
      const { result } = await run({ script })
      expect([result.stopReason, result.error], script).toEqual(['error', expect.stringMatching(error)])
    }
    // The engine has no require, process, timers or network.
    const { result } = await run({ script: cases.at(-1)![0] })
    expect(result.value).toBe('undefinedundefinedundefinedundefined')
  })

  it('a return value that reads deeper the second time (a getter) is refused, and the sidecar lives on', async () => {
    // The guest checked the value once, then serialized a second read: 4,500 levels, past the
    // ~4,000 at which V8's JSON.stringify throws, which killed the sidecar as it stored the result.
    const script = `let reads = 0
      const deep = () => { let v = 1; for (let i = 0; i < 4500; i++) v = [v]; return v }
      return { get x() { return reads++ === 0 ? 1 : deep() } }`
    const { result } = await run({ script })
    expect([result.stopReason, result.error]).toEqual([
      'error',
      expect.stringMatching(/^RESULT_UNSERIALIZABLE: the return value is not plain JSON: it nests more than 200 arrays and objects/),
    ])
    expect(alive(h.sidecar.pid)).toBe(true)
    // The bound, as the guest and the host both count it.
    const nested = (depth: number) => `let v = 1; for (let i = 0; i < ${depth}; i++) v = [v]; return v`
    const { result: at } = await run({ script: nested(200) })
    expect(JSON.stringify(at.value)).toBe(`${'['.repeat(200)}1${']'.repeat(200)}`)
    const { result: past } = await run({ script: nested(201) })
    expect(past.error).toMatch(/^RESULT_UNSERIALIZABLE: the return value is not plain JSON: it nests more than 200 arrays and objects at 0/)
  })

  it("an error names the script's own line and column, wherever it was thrown", async () => {
    const cases: [string, string][] = [
      ["throw new RangeError('first line')", 'RangeError: first line (line 1, column 21)'],
      ['const a = 1\n\nnull.x', "TypeError: cannot read property 'x' of null (line 3, column 5)"],
      [
        "function outer() {\n  return inner()\n}\nfunction inner() {\n  throw new Error('deep')\n}\nouter()",
        'Error: deep (line 5, column 18)',
      ],
      [
        "await agent('one [result]')\nlog('between')\n  await agent(42)",
        'INVALID_ARGUMENT: agent(prompt, options?) needs a prompt: a non-empty string (line 3, column 14)',
      ],
      [
        "await parallel([1, 2], (n) => n)\nreturn await parallel([1], () =>\n  agent('x', { lable: 1 }))",
        'UNSUPPORTED_OPTION: agent() has no option "lable" (its options: label, profile) (line 3, column 8)',
      ],
      ['\n\n\n\nthrow 7', 'the script threw 7'],
    ]
    for (const [script, error] of cases) {
      const { result } = await run({ script })
      expect([result.stopReason, result.error], script).toEqual(['error', error])
    }
  })

  it('a script process that dies (killed) ends the run as error; its members are closed', async () => {
    const started = await startRun(h, token, { script: "await agent('held [hang]')" })
    await runEvents(h, token, started.id, (e) => e.some((x) => x.event === 'workflow/agent-start'))
    const [row] = (await h.storage.client.execute({ sql: 'SELECT pid FROM workflow_runs WHERE id = ?', args: [started.id] })).rows
    process.kill(Number(row.pid), 'SIGKILL')
    const events = await runEvents(h, token, started.id)
    expect(endOf(events)).toMatchObject({
      stopReason: 'error',
      error: expect.stringMatching(/^the script process was killed \(SIGKILL\)/),
      agentsStarted: 1,
    })
    expect(events.filter((e) => e.event === 'workflow/agent-end').map((e) => json(e).outcome)).toEqual(['cancelled'])
    expect(processesOfRun(started.id)).toEqual([])
    await expectValidLog(h, token, started.id, events)
  })

  it("a script process holds none of the sidecar's descriptors: no terminal, database or journal", async () => {
    const started = await startRun(h, token, { script: "await agent('held [hang]')" })
    await runEvents(h, token, started.id, (e) => e.some((x) => x.event === 'workflow/agent-start'))
    const [row] = (await h.storage.client.execute({ sql: 'SELECT pid FROM workflow_runs WHERE id = ?', args: [started.id] })).rows
    const tree = (pid: number): number[] => [
      pid,
      ...readFileSync(`/proc/${pid}/task/${pid}/children`, 'latin1').split(' ').filter(Boolean).map(Number).flatMap(tree),
    ]
    const targets = (pid: number) =>
      readdirSync(`/proc/${pid}/fd`).map((fd) => {
        try {
          return readlinkSync(`/proc/${pid}/fd/${fd}`)
        } catch {
          return 'gone'
        }
      })
    const sidecar = targets(h.sidecar.pid)
    const theirs = (found: string[]) => found.filter((target) => /^\/dev\/(ptmx|pts\/)|\.db|\.journal$/.test(target))
    // What there is to leak: the member's terminal, the database, its journal.
    expect(theirs(sidecar).length).toBeGreaterThanOrEqual(3)
    for (const pid of tree(Number(row.pid))) expect(theirs(targets(pid)), `process ${pid}`).toEqual([])
    expect((await h.request('POST', `/v1/sessions/s1/workflows/${started.id}/cancel`, { token, body: {} })).status).toBe(200)
  })

  it('returns what the script returns, with input in scope and logs in order', async () => {
    const { result, events } = await run({
      script: "log('n is', input.n); log({ deep: [1] }); return { doubled: input.n * 2 }",
      input: { n: 21 },
    })
    expect(result).toEqual({ stopReason: 'completed', value: { doubled: 42 }, agentsStarted: 0 })
    expect(events.filter((e) => e.event === 'workflow/log').map((e) => json(e).message)).toEqual(['n is 21', '{ deep: [ 1 ] }'])
    const none = await run({ script: 'return input === undefined' })
    expect(none.result.value).toBe(true)
  })
})

describe('prompts', () => {
  it('reach the agent as an argument, on stdin, or in the environment', async () => {
    const script = `return await parallel([
      agent('by argument [result]'),
      agent('by stdin [result]', { profile: 'stdin' }),
      agent('by env [result]', { profile: 'env' }),
    ].map((p) => () => p))`
    const { result } = await run({ script })
    expect(result.value).toEqual(['result: by argument', 'result: by stdin', 'result: by env'])
  })

  it('refuses a prompt its agent would not get as written: a NUL in an argument or the environment, an argument that reads as an option', async () => {
    const cases: [string, RegExp][] = [
      // The agent got "a" (the argument and the variable are C strings).
      [
        "await agent('a\\u0000b [result]')",
        /^INVALID_ARGUMENT: profile "default" takes its prompt as an argument, which cannot carry a NUL/,
      ],
      [
        "await agent('a\\u0000b [result]', { profile: 'env' })",
        /^INVALID_ARGUMENT: profile "env" takes its prompt as an environment variable/,
      ],
      // The fake agent took it as its own option and read its prompt from the environment instead.
      [
        "await agent('--from=env [result]')",
        /^INVALID_ARGUMENT: profile "default" takes its prompt as its last argument, where one starting with "-"/,
      ],
    ]
    for (const [script, error] of cases) {
      const { result } = await run({ script })
      expect([result.stopReason, result.error, result.agentsStarted], script).toEqual(['error', expect.stringMatching(error), 0])
    }
    // After "--", or in the environment, a leading "-" is only text.
    expect(promptProblem('p', { command: ['agent', '--'], prompt: 'argument' }, '--help')).toBeUndefined()
    expect(promptProblem('p', { command: ['agent'], prompt: 'env' }, '--help')).toBeUndefined()
    expect(promptProblem('p', { command: ['agent'], prompt: 'argument' }, 'fix --help')).toBeUndefined()
  })

  it('refuses a stdin prompt the terminal would mangle', async () => {
    const { result } = await run({ script: "await agent('line\\u0003break', { profile: 'stdin' })" })
    expect(result.error).toMatch(/^INVALID_ARGUMENT: profile "stdin" takes its prompt on stdin/)
  })
})

describe('cancel', () => {
  it('mid-flight: both hanging members are closed (process groups gone), ends synthesized, run cancelled', async () => {
    const started = await startRun(h, token, { script: "return await parallel(['a [hang]', 'b [hang]'], (p) => agent(p))" })
    const response = await h.request('GET', eventsPath(started.id), { token })
    const seen = await readEvents(response, (e) => e.filter((x) => x.event === 'workflow/agent-start').length === 2, 30_000)
    expect(seen.filter((e) => e.event === 'workflow/agent-start')).toHaveLength(2)
    // Each member and the child it started (both ignore SIGHUP).
    expect(await eventually(() => processesOfRun(started.id).length >= 4)).toBe(true)
    const asked = Date.now()
    const cancelled = await h.request('POST', `/v1/sessions/s1/workflows/${started.id}/cancel`, { token, body: { reason: 'enough' } })
    expect(cancelled.status).toBe(200)
    const { run: after } = (await cancelled.json()) as any
    expect(Date.now() - asked).toBeLessThan(10_000)
    // It answered once the cleanup was done: nothing of the run is left at that moment.
    expect(processesOfRun(started.id)).toEqual([])
    expect(after).toMatchObject({
      status: 'cancelled',
      cancelReason: 'enough',
      result: { stopReason: 'cancelled', error: 'cancelled: enough', agentsStarted: 2 },
    })
    expect(after.members.map((m: any) => m.state)).toEqual(['cancelled', 'cancelled'])
    expect((await terminalsOf(started.id)).map((t) => t.state)).toEqual(['retired', 'retired'])
    const events = await runEvents(h, token, started.id)
    expect(events.filter((e) => e.event === 'workflow/agent-end').map((e) => json(e).outcome)).toEqual(['cancelled', 'cancelled'])
    await expectValidLog(h, token, started.id, events)
    // Repeatable: an ended run answers as it is, the first reason kept.
    const again = await h.request('POST', `/v1/sessions/s1/workflows/${started.id}/cancel`, { token, body: { reason: 'other' } })
    expect(((await again.json()) as any).run.cancelReason).toBe('enough')
  })

  it("a member's `setsid sleep 601 &` ends with its run: on cancel, and when the run completes", async () => {
    const sleepers = (rid: string) =>
      processesOfRun(rid).filter((pid) => readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ') === 'sleep 601 ')
    const started = await startRun(h, token, { script: "return await agent('left behind [setsid] [hang]')" })
    expect(await eventually(() => sleepers(started.id).length === 1)).toBe(true)
    const [sleeper] = sleepers(started.id)
    // It left the terminal's session: closing the terminal alone does not reach it.
    expect(processStat(sleeper)!.session).toBe(sleeper)
    const cancelled = await h.request('POST', `/v1/sessions/s1/workflows/${started.id}/cancel`, { token, body: {} })
    expect(cancelled.status).toBe(200)
    expect(processesOfRun(started.id)).toEqual([])
    expect(alive(sleeper)).toBe(false)

    const { id, result } = await run({ script: "const r = await agent('done soon [setsid]'); return r.stopReason" })
    expect(result.value).toBe('completed')
    expect(processesOfRun(id)).toEqual([])
  })

  it('a script that never settles (while (true) {}) is cancelled at once: its process is killed', async () => {
    const started = await startRun(h, token, { script: 'log("spinning"); while (true) {}' })
    await runEvents(h, token, started.id, (e) => e.some((x) => x.event === 'workflow/log'))
    const [row] = (await h.storage.client.execute({ sql: 'SELECT pid FROM workflow_runs WHERE id = ?', args: [started.id] })).rows
    const pid = Number(row.pid)
    expect(alive(pid)).toBe(true)
    const cancelled = await h.request('POST', `/v1/sessions/s1/workflows/${started.id}/cancel`, { token, body: {} })
    expect(((await cancelled.json()) as any).run).toMatchObject({
      status: 'cancelled',
      result: { stopReason: 'cancelled', error: 'cancelled' },
    })
    expect(alive(pid)).toBe(false)
    const events = await runEvents(h, token, started.id)
    await expectValidLog(h, token, started.id, events)
  })

  it('a FIFO left at the result path is not waited on: the member ends with its output, and cancel answers at once', async () => {
    const started = await startRun(h, token, {
      script: "return await parallel(['piped [fifo]', 'held [hang]'], (p) => agent(p).then((r) => [r.stopReason, r.text]))",
    })
    const response = await h.request('GET', eventsPath(started.id), { token })
    const seen = await readEvents(response, (e) => e.some((x) => x.event === 'workflow/agent-end'), 30_000)
    expect(seen.filter((e) => e.event === 'workflow/agent-end').map((e) => json(e))).toMatchObject([{ seq: 1, outcome: 'completed' }])
    const asked = Date.now()
    const cancelled = await h.request('POST', `/v1/sessions/s1/workflows/${started.id}/cancel`, { token, body: {} })
    expect(((await cancelled.json()) as any).run).toMatchObject({
      status: 'cancelled',
      members: [{ state: 'completed' }, { state: 'cancelled' }],
    })
    expect(Date.now() - asked).toBeLessThan(10_000)
    await expectValidLog(h, token, started.id, await runEvents(h, token, started.id))
    // Alone, it ends the run: its text is what its terminal showed.
    const { result } = await run({ script: "const r = await agent('alone [fifo]'); return [r.stopReason, r.text]" })
    expect(result.value).toEqual(['completed', expect.stringContaining('fake-agent got: alone [fifo]')])
  })

  it('a member whose terminal a person closes ends cancelled; the script sees null', async () => {
    const started = await startRun(h, token, { script: "return await parallel(['x [hang]', 'y [result]'], (p) => agent(p))" })
    await runEvents(h, token, started.id, (e) => e.filter((x) => x.event === 'workflow/agent-start').length === 2)
    expect((await h.request('DELETE', `/v1/sessions/s1/terminals/${started.id}-1`, { token })).status).toBe(200)
    const events = await runEvents(h, token, started.id)
    expect(endOf(events).value).toEqual([null, 'result: y'])
    expect(
      events.find((e) => e.event === 'workflow/agent-end' && json(e).seq === 1) &&
        json(events.find((e) => e.event === 'workflow/agent-end' && json(e).seq === 1)!).outcome,
    ).toBe('cancelled')
    await expectValidLog(h, token, started.id, events)
  })
})

describe('a person takes over a member', () => {
  it('follows a sub-agent terminal during the run and types into it', async () => {
    const started = await startRun(h, token, { script: "return (await agent('[echo-input]', { label: 'interactive' })).text" })
    const events = await runEvents(h, token, started.id, (e) => e.some((x) => x.event === 'workflow/agent-start'))
    const terminal = json(events.find((e) => e.event === 'workflow/agent-start')!).terminal
    const person = await followTerminal(h, token, terminal)
    await person.until('ready for input')
    await person.type('hello from a person\r')
    await person.until('typed: hello from a person')
    await person.type('done\r')
    await person.close()
    const rest = await runEvents(h, token, started.id)
    expect(endOf(rest).value).toContain('typed: hello from a person')
    await expectValidLog(h, token, started.id, rest)
  })
})

describe('readText', () => {
  it("reads under the caller's authority, re-checked on every call", async () => {
    const stored = (await (
      await h.request('POST', '/v1/sessions/s1/attachments', { token, body: { name: 'a.txt', content: 'attached' } })
    ).json()) as any
    const script = `
      const first = await readText({ address: 'notes.txt', limit: 2 })
      const rest = await readText(first.next)
      const attached = await readText(input.address)
      let missing
      try { await readText('nope.txt') } catch (e) { missing = e.code }
      return { first: first.text, rest: rest.text, attached: attached.text, missing }`
    const { result } = await run({ script, input: { address: stored.address } })
    expect(result.value).toEqual({ first: 'one\ntwo', rest: 'three', attached: 'attached', missing: 'files/not-found' })

    // A token that may run workflows but not read files reads nothing through a script.
    const runner = await h.token(['workflows:run', 'workflows:read'])
    const started = await startRun(h, runner, { script: "try { await readText('notes.txt') } catch (e) { return e.code }" })
    const events = await runEvents(h, runner, started.id)
    expect(endOf(events).value).toBe('auth/forbidden')
    await expectValidLog(h, token, started.id, events)
  })

  it('reads nothing more once the token that started the run is revoked, while the run goes on', async () => {
    const grants = ['workflows:run', 'workflows:read', 'files:read'] as const
    const { token: record, secret } = await createToken(h.storage.db, { name: 'runner', grants, sessions: ['s1'] })
    const script = `
      const before = (await readText('notes.txt')).text.split('\\n')[0]
      await agent('[echo-input]')
      let after
      try { await readText('notes.txt') } catch (e) { after = e.code }
      return { before, after }`
    const started = await startRun(h, secret, { script })
    const events = await runEvents(h, token, started.id, (e) => e.some((x) => x.event === 'workflow/agent-start'))
    expect((await h.request('DELETE', `/v1/tokens/${record.id}`, { token })).status).toBe(200)
    const person = await followTerminal(h, token, json(events.find((e) => e.event === 'workflow/agent-start')!).terminal)
    await person.until('ready for input')
    await person.type('done\r')
    await person.close()
    const all = await runEvents(h, token, started.id)
    expect(endOf(all).value).toEqual({ before: 'one', after: 'auth/invalid-token' })
    await expectValidLog(h, token, started.id, all)
  })
})

describe('refused before anything is published', () => {
  async function tableCounts(): Promise<string> {
    const counts = []
    for (const table of ['workflow_runs', 'workflow_events', 'terminals'])
      counts.push((await h.storage.client.execute(`SELECT count(*) AS n FROM ${table}`)).rows[0].n)
    return counts.join(',')
  }

  it.each([
    ['an unparseable script', { script: 'return (' }, 'workflow/invalid-script', /does not parse: .*\(at the end of the script\)/],
    [
      'a syntax error on a line',
      { script: 'const a = 1\nconst = 2\nreturn a' },
      'workflow/invalid-script',
      /does not parse: .*\(line 2, column 7\)$/,
    ],
    [
      'a syntax error deeper in',
      { script: 'for (const x of [1]) {\n  log(x)\n  if (x) {\n    return x +\n  }\n}' },
      'workflow/invalid-script',
      /does not parse: .*\(line 5, column 3\)$/,
    ],
    [
      'a script nested too deep to parse',
      { script: `return ${'('.repeat(20_000)}1${')'.repeat(20_000)}` },
      'workflow/invalid-script',
      /nests too deeply|stack overflow/,
    ],
    ['a script that closes its own function', { script: '}); (async () => {' }, 'workflow/invalid-script', /does not parse/],
    [
      'an unknown profile',
      { script: 'return 1', profile: 'nope' },
      'workflow/unknown-profile',
      /no agent profile "nope" \(configured: default, stdin, env\)/,
    ],
    ['an oversized script', { script: `//${'x'.repeat(256 * 1024)}` }, 'request/invalid', /at most 262144 bytes/],
    ['an unknown option', { script: 'return 1', concurency: 2 }, 'request/invalid', /concurency/],
    ['a concurrency of 0', { script: 'return 1', concurrency: 0 }, 'request/invalid', /concurrency/],
    ['a concurrency over the limit', { script: 'return 1', concurrency: 99 }, 'request/invalid', /at most 8/],
    ['no script', { input: 1 }, 'request/invalid', /script/],
    ['an oversized input', { script: 'return 1', input: 'x'.repeat(600 * 1024) }, 'request/invalid', /input is at most 524288 bytes/],
  ])('%s: a typed 400, and no run, event or terminal', async (_name, body, code, message) => {
    const before = await tableCounts()
    const response = await h.request('POST', '/v1/sessions/s1/workflows', { token, body })
    expect(response.status).toBe(400)
    const { error } = (await response.json()) as any
    expect(error.code).toBe(code)
    expect(error.message).toMatch(message)
    expect(await tableCounts()).toBe(before)
  })

  it('an unknown run is 404, a list pages newest first, and events resume after Last-Event-ID', async () => {
    expect((await h.request('GET', '/v1/sessions/s1/workflows/wf_none', { token })).status).toBe(404)
    expect((await h.request('GET', eventsPath('wf_none'), { token })).status).toBe(404)
    expect((await h.request('POST', '/v1/sessions/s1/workflows/wf_none/cancel', { token, body: {} })).status).toBe(404)
    const a = await run({ script: "log('a'); return 'a'" })
    const b = await run({ script: "log('b'); return 'b'" })
    const page = (await (await h.request('GET', '/v1/sessions/s1/workflows?limit=1', { token })).json()) as any
    expect([page.runs.map((r: any) => r.id), page.more]).toEqual([[b.id], true])
    const next = (await (await h.request('GET', `/v1/sessions/s1/workflows?limit=1&before=${b.id}`, { token })).json()) as any
    expect(next.runs.map((r: any) => r.id)).toEqual([a.id])
    const resumed = await h.request('GET', eventsPath(a.id), { token, headers: { 'last-event-id': '1' } })
    const events = (await readEvents(resumed, (e) => e.some((x) => x.event === 'workflow/end'))).filter((e) => e.event !== ':')
    expect(events.map((e) => [e.id, e.event])).toEqual([
      ['2', 'workflow/log'],
      ['3', 'workflow/end'],
    ])
  })
})
