/**
 * The workflow tools end to end: the MCP SDK's Client over real HTTP against the Node API, a real
 * sidecar whose TERMKEEP_AGENTS runs the fake agent (test/fixtures/fake-agent.mjs) in real PTY
 * terminals, and libSQL. Runs are started, waited for, read as events from a cursor (compared with
 * the HTTP stream of the same run), cancelled; tools are listed and refused per grant.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { callTool, errorOf, factsOf, mcpStack, type McpStack } from '../support/mcp.ts'
import { AGENTS_ENV, eventually, prepare, processesOfRun, runEvents } from '../workflows/support.ts'
import { startHarness, type Harness } from './harness.ts'

let h: Harness
let stack: McpStack
let admin: Client
let adminToken: string
const client = (token: string) => stack.client(token)

async function runCount(): Promise<number> {
  return Number((await h.storage.client.execute('SELECT count(*) AS n FROM workflow_runs')).rows[0]!.n)
}

/** workflow_events from `after` on, call after call, until the run ended; every page's facts. */
async function readAll(c: Client, rid: string, after: number, bounds: Record<string, number>) {
  const pages: any[] = []
  for (let cursor = after; pages.length < 100; ) {
    const page = factsOf(await callTool(c, 'workflow_events', { sid: 's1', rid, after: cursor, ...bounds }))
    pages.push(page)
    if (page.reason === 'ended') break
    cursor = page.next
  }
  return pages
}

beforeAll(async () => {
  h = await startHarness({ sidecarEnv: AGENTS_ENV })
  ;({ token: adminToken } = await prepare(h))
  stack = await mcpStack(h)
  admin = await client(adminToken)
}, 60_000)

afterAll(async () => {
  await stack?.close()
  await h?.close()
})

let finished: string

describe('running workflows through MCP', () => {
  it('runs a workflow and, with wait, answers its result and members', async () => {
    const script = "log('starting', input.n); return await parallel(['one [result]', 'two'], (prompt) => agent(prompt))"
    const answer = factsOf(await callTool(admin, 'run_workflow', { sid: 's1', script, input: { n: 2 }, wait: true, timeoutMs: 45_000 }))
    expect(answer).toMatchObject({
      timedOut: false,
      run: {
        sessionId: 's1',
        status: 'completed',
        result: { stopReason: 'completed', value: ['result: one', 'fake-agent got: two'], agentsStarted: 2 },
      },
    })
    expect(answer.run.members.map((m: any) => [m.seq, m.state, m.exitCode])).toEqual([
      [1, 'completed', 0],
      [2, 'completed', 0],
    ])
    expect(answer.run.script).toBeUndefined()
    expect(answer.next).toBe(answer.run.lastSequence)
    finished = answer.run.id
    const status = factsOf(await callTool(admin, 'workflow_status', { sid: 's1', rid: finished }))
    expect(status).toMatchObject({ id: finished, status: 'completed', script, input: { n: 2 }, log: { valid: true } })
    const listed = factsOf(await callTool(admin, 'list_workflows', { sid: 's1', limit: 5 }))
    expect(listed.runs.map((r: any) => r.id)).toContain(finished)
  })

  it('reads the events from a cursor in order; continuing from next gives the rest, none twice', async () => {
    const reference = await runEvents(h, adminToken, finished)
    const ids = reference.map((e) => Number(e.id))
    expect(ids.at(-1)).toBeGreaterThanOrEqual(6) // start, log, 2 × (agent-start, agent-end), end
    const first = factsOf(await callTool(admin, 'workflow_events', { sid: 's1', rid: finished, after: 0, maxEvents: 3 }))
    expect(first).toMatchObject({ reason: 'limit', next: 3 })
    expect(first.events.map((e: any) => e.id)).toEqual(ids.slice(0, 3))
    expect(first.events[0]).toMatchObject({ event: 'workflow/start', data: { run: { id: finished } } })
    expect(first.events[1]).toMatchObject({ event: 'workflow/log', data: { message: 'starting 2' } })
    // Small byte pages: an event that does not fit waits for the next call, a large one comes alone.
    // (agent-start data is ~100 bytes, agent-end ~60, the end ~120: two fit in 170, never three.)
    const rest = await readAll(admin, finished, first.next, { maxBytes: 170 })
    expect(rest.length).toBeGreaterThan(1)
    expect(rest.slice(0, -1).every((page) => page.reason === 'limit')).toBe(true)
    for (const page of rest) expect(page.bytes <= 170 || page.events.length === 1, JSON.stringify(page)).toBe(true)
    expect(rest.some((page) => page.events.length >= 2)).toBe(true)
    expect(rest.at(-1)).toMatchObject({ reason: 'ended', next: ids.at(-1) })
    const all = [...first.events, ...rest.flatMap((page) => page.events)]
    expect(all.map((e: any) => e.id)).toEqual(ids)
    expect(all.map((e: any) => e.event)).toEqual(reference.map((e) => e.event))
    expect(all.at(-1)).toMatchObject({ event: 'workflow/end', data: { result: { stopReason: 'completed' } } })
    // From the end: nothing more, answered at once.
    expect(factsOf(await callTool(admin, 'workflow_events', { sid: 's1', rid: finished, after: ids.at(-1)! }))).toMatchObject({
      events: [],
      reason: 'ended',
      next: ids.at(-1),
    })
  })

  it('times a wait out on a hanging run, reads quiet, refuses a reader, and cancels it', async () => {
    const reader = await client(await h.token(['workflows:read']))
    const started = factsOf(
      await callTool(admin, 'run_workflow', { sid: 's1', script: "return await agent('stuck [hang]')", wait: true, timeoutMs: 300 }),
    )
    expect(started).toMatchObject({ timedOut: true, run: { status: 'running', result: null } })
    const rid = started.run.id as string
    // Wait, event-driven, until its agent started (quietMs bounds each call).
    let cursor = 0
    await eventually(async () => {
      const page = factsOf(await callTool(reader, 'workflow_events', { sid: 's1', rid, after: cursor, quietMs: 5_000 }))
      cursor = page.next ?? cursor
      return page.events.some((e: any) => e.event === 'workflow/agent-start')
    }, 30_000)
    const before = Date.now()
    const quiet = factsOf(await callTool(reader, 'workflow_events', { sid: 's1', rid, after: cursor, quietMs: 300 }))
    expect(quiet).toMatchObject({ events: [], reason: 'quiet', next: cursor })
    expect(Date.now() - before).toBeGreaterThanOrEqual(300)
    expect(processesOfRun(rid).length).toBeGreaterThan(0)
    // A token without workflows:run is refused, and the run goes on.
    expect(errorOf(await callTool(reader, 'cancel_workflow', { sid: 's1', rid }))).toMatchObject({
      code: 'auth/forbidden',
      required: 'workflows:run',
    })
    expect(factsOf(await callTool(reader, 'workflow_status', { sid: 's1', rid })).status).toBe('running')
    const cancelled = factsOf(await callTool(admin, 'cancel_workflow', { sid: 's1', rid, reason: 'test over' }))
    expect(cancelled.run).toMatchObject({ status: 'cancelled', cancelReason: 'test over', result: { stopReason: 'cancelled' } })
    expect(cancelled.run.members.map((m: any) => m.state)).toEqual(['cancelled'])
    expect(await eventually(() => processesOfRun(rid).length === 0)).toBe(true)
    const tail = factsOf(await callTool(reader, 'workflow_events', { sid: 's1', rid, after: cursor }))
    expect(tail.reason).toBe('ended')
    expect(tail.events.at(-1)).toMatchObject({ event: 'workflow/end', data: { result: { stopReason: 'cancelled' } } })
    // Cancelling again answers the run as it is.
    expect(factsOf(await callTool(admin, 'cancel_workflow', { sid: 's1', rid })).run).toMatchObject({
      status: 'cancelled',
      cancelReason: 'test over',
    })
  })
})

describe('authority', () => {
  it('shows a token without workflows:run no run or cancel, and refuses them; nothing starts', async () => {
    const reader = await client(await h.token(['workflows:read']))
    expect((await reader.listTools()).tools.map((t) => t.name).sort()).toEqual(['list_workflows', 'workflow_events', 'workflow_status'])
    const runs = await runCount()
    expect(errorOf(await callTool(reader, 'run_workflow', { sid: 's1', script: 'return 1' }))).toMatchObject({ code: 'auth/forbidden' })
    expect(await runCount()).toBe(runs)
  })

  it('refuses waiting without workflows:read before starting anything; without wait it starts', async () => {
    const runner = await client(await h.token(['workflows:run']))
    expect((await runner.listTools()).tools.map((t) => t.name).sort()).toEqual(['cancel_workflow', 'run_workflow'])
    const runs = await runCount()
    const refused = errorOf(await callTool(runner, 'run_workflow', { sid: 's1', script: 'return 1', wait: true }))
    expect(refused).toMatchObject({ code: 'auth/forbidden', required: 'workflows:read', message: expect.stringContaining('wait') })
    expect(await runCount()).toBe(runs)
    const started = factsOf(await callTool(runner, 'run_workflow', { sid: 's1', script: 'return 1' }))
    expect(started.run).toMatchObject({ sessionId: 's1', id: expect.stringMatching(/^wf_/) })
    expect(await runCount()).toBe(runs + 1)
    // A token bound to other sessions: the route's own 404.
    const scoped = await client(await h.token(['workflows:run', 'workflows:read'], ['elsewhere']))
    expect(errorOf(await callTool(scoped, 'workflow_status', { sid: 's1', rid: started.run.id }))).toMatchObject({
      code: 'session/not-found',
    })
  })
})

describe('bad arguments', () => {
  it("are validation errors with the routes' own codes, never a crash, and start nothing", async () => {
    const runs = await runCount()
    const code = async (name: string, args: Record<string, unknown>) => errorOf(await callTool(admin, name, { sid: 's1', ...args })).code
    expect(await code('run_workflow', { script: 'return (' })).toBe('workflow/invalid-script')
    expect(await code('run_workflow', { script: 'return 1', profile: 'nobody' })).toBe('workflow/unknown-profile')
    expect(await code('run_workflow', { script: 'return 1', concurrency: 99 })).toBe('request/invalid')
    expect(await code('run_workflow', { script: 42 })).toBe('request/invalid')
    expect(await code('run_workflow', { script: 'return 1', colour: 'red' })).toBe('request/invalid')
    expect(await code('run_workflow', { script: 'return 1', wait: 'yes' })).toBe('request/invalid')
    expect(await code('run_workflow', { script: 'return 1', wait: true, timeoutMs: -1 })).toBe('request/invalid')
    expect(await runCount()).toBe(runs)
    expect(await code('workflow_status', { rid: '../x' })).toBe('request/invalid')
    expect(await code('workflow_status', { rid: 'wf_none' })).toBe('workflow/not-found')
    expect(await code('workflow_events', { rid: 'wf_none' })).toBe('workflow/not-found')
    expect(await code('workflow_events', { rid: finished, after: -1 })).toBe('request/invalid')
    expect(await code('workflow_events', { rid: finished, after: 'x' })).toBe('request/invalid')
    expect(await code('workflow_events', { rid: finished, maxEvents: 0 })).toBe('request/invalid')
    expect(await code('workflow_events', { rid: finished, quietMs: 10 ** 9 })).toBe('request/invalid')
    expect(await code('list_workflows', { limit: 0 })).toBe('request/invalid')
    expect(await code('list_workflows', { before: 'a b' })).toBe('request/invalid')
    expect(await code('cancel_workflow', { rid: finished, reason: '  ' })).toBe('request/invalid')
    expect(await code('cancel_workflow', { rid: 'wf_none' })).toBe('workflow/not-found')
    expect(await code('workflow_status', { sid: 'nope', rid: finished })).toBe('session/not-found')
  })
})
