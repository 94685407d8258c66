/**
 * Limits a run cannot dodge, through the real stack: live runs per session, per token and per
 * server (the 409 says whose limit, and how to free a place), and each run's wall-clock time,
 * CPU time and memory (the result says which limit ended it).
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  DEFAULT_WORKFLOW_CPU_TIME_MS,
  DEFAULT_WORKFLOW_WALL_TIME_MS,
  MAX_RUNNING_WORKFLOWS,
  MAX_WORKFLOW_ERROR_BYTES,
  MAX_WORKFLOW_RESULT_DEPTH,
  MAX_RUNNING_WORKFLOWS_PER_SESSION,
  MAX_RUNNING_WORKFLOWS_PER_TOKEN,
} from '../../schema/limits.ts'
import { GRANTS } from '../../schema/grants.ts'
import { json, startHarness, type Harness } from '../api/harness.ts'
import { nestsDeeper, within } from '../../sidecar/workflows/host-checks.ts'
import { AGENTS_ENV, endOf, expectValidLog, runEvents, startRun } from './support.ts'

let h: Harness
let admin: string
const SESSIONS = ['s1', 's2', 's3', 's4']
/** A run that never returns on its own: its agent sleeps for ten minutes. */
const HELD = { script: "await agent('held [sleep:600000]'); return 'never'" }

beforeAll(async () => {
  h = await startHarness({ sidecarEnv: AGENTS_ENV })
  admin = await h.token(GRANTS)
  const workspace = join(realpathSync(h.dir), 'ws')
  mkdirSync(workspace, { recursive: true })
  expect((await h.request('POST', '/v1/workspaces', { token: admin, body: { path: workspace } })).status).toBe(201)
  for (const id of SESSIONS)
    expect((await h.request('POST', '/v1/sessions', { token: admin, body: { id, cwd: workspace } })).status).toBe(201)
}, 60_000)
afterAll(async () => {
  await h?.close()
})

const start = (token: string, session: string, body: Record<string, unknown> = HELD) =>
  h.request('POST', `/v1/sessions/${session}/workflows`, { token, body })
const cancel = (session: string, run: string) =>
  h.request('POST', `/v1/sessions/${session}/workflows/${run}/cancel`, { token: admin, body: {} })

describe('places for live runs', () => {
  it("one token's never-ending runs in one session cannot take another session's place; each 409 says whose limit", async () => {
    const runner = await h.token(['workflows:run', 'workflows:read'], ['s1'])
    const other = await h.token(['workflows:run', 'workflows:read'], ['s2'])
    const wide = await h.token(['workflows:run', 'workflows:read'], ['s3', 's4'])
    const started: [string, string][] = []
    const take = async (token: string, session: string) => {
      const response = await start(token, session)
      const body = (await response.json()) as any
      expect(response.status, JSON.stringify(body)).toBe(201)
      started.push([session, body.run.id])
    }
    try {
      for (let i = 0; i < MAX_RUNNING_WORKFLOWS_PER_SESSION; i++) await take(runner, 's1')
      const full = await start(runner, 's1')
      expect(full.status).toBe(409)
      const { error } = (await full.json()) as any
      expect(error).toMatchObject({
        code: 'workflow/limit-reached',
        scope: 'session',
        limit: MAX_RUNNING_WORKFLOWS_PER_SESSION,
        running: 4,
      })
      expect(error.message).toMatch(/^session s1 has 4 runs alive, at most 4 per session; cancel one .*or wait for one to end$/)

      // Another session starts while s1 is full.
      await take(other, 's2')
      expect((await cancel(...started.pop()!)).status).toBe(200)

      // A token across two sessions: its own limit, though neither session is full.
      for (const session of ['s3', 's3', 's4', 's4']) await take(wide, session)
      const mine = (await (await start(wide, 's4')).json()) as any
      expect(mine.error).toMatchObject({
        code: 'workflow/limit-reached',
        scope: 'token',
        limit: MAX_RUNNING_WORKFLOWS_PER_TOKEN,
        sessions: ['s3', 's4'],
      })

      // The server is full now: a session and a token with no run at all are refused, and told so.
      const server = await start(other, 's2')
      expect(server.status).toBe(409)
      const refused = ((await server.json()) as any).error
      expect(refused).toMatchObject({ code: 'workflow/limit-reached', scope: 'server', limit: MAX_RUNNING_WORKFLOWS, running: 8 })
      expect(refused.message).toMatch(/wait for one to end \(runs of other sessions are not yours to cancel\)$/)

      // Cancelling frees a place.
      expect((await cancel(...started.shift()!)).status).toBe(200)
      await take(other, 's2')
    } finally {
      await Promise.all(started.map((run) => cancel(...run)))
    }
  })
})

describe("a run's own limits", () => {
  // 5 s: its agent must have started by then, also on a loaded machine.
  it('a sleeping run ends at its wall-clock limit, its agent cancelled', async () => {
    const run = await startRun(h, admin, { script: "await agent('nap [sleep:600000]'); return 1", limits: { wallTimeMs: 5000 } }, 's1')
    expect(run.limits).toEqual({ wallTimeMs: 5000, cpuTimeMs: DEFAULT_WORKFLOW_CPU_TIME_MS })
    const events = await runEvents(h, admin, run.id, undefined, 30_000)
    expect(endOf(events)).toEqual({
      stopReason: 'error',
      limit: 'wall-time',
      error: 'WALL_TIME_LIMIT: the run reached its wall-clock limit of 5 s',
      agentsStarted: 1,
    })
    expect(events.filter((e) => e.event === 'workflow/agent-end').map((e) => json(e).outcome)).toEqual(['cancelled'])
    const detail = (await (await h.request('GET', `/v1/sessions/s1/workflows/${run.id}`, { token: admin })).json()) as any
    expect(detail).toMatchObject({ status: 'error', result: { limit: 'wall-time' } })
  })

  it('a spinning run ends at its CPU-time limit', async () => {
    const run = await startRun(h, admin, { script: 'log("spinning"); while (true) {}', limits: { cpuTimeMs: 500 } }, 's1')
    const result = endOf(await runEvents(h, admin, run.id, undefined, 30_000))
    expect(result).toEqual({
      stopReason: 'error',
      limit: 'cpu-time',
      error: 'CPU_TIME_LIMIT: the script used its CPU time limit of 0.5 s',
      agentsStarted: 0,
    })
  })

  it("a run whose readText() calls keep the sidecar busy ends at its CPU-time limit: the sidecar's time serving them counts", async () => {
    // Its own process used a fraction of the sidecar's time (0.06 to 0.14 of a core against 0.4 to
    // 0.7 measured), and it ran until its wall-clock limit.
    const script = "for (;;) { try { await readText('no-such-file') } catch {} }"
    const run = await startRun(h, admin, { script, limits: { cpuTimeMs: 5000, wallTimeMs: 50_000 } }, 's1')
    const result = endOf(await runEvents(h, admin, run.id, undefined, 60_000))
    expect(result).toEqual({
      stopReason: 'error',
      limit: 'cpu-time',
      error: expect.stringMatching(
        /^CPU_TIME_LIMIT: the script used its CPU time limit of 5 s \(with the sidecar's time serving its readText\(\) calls: \d+ ms\)$/,
      ),
      agentsStarted: 0,
    })
  }, 70_000)

  it('an allocating run ends at its memory limit, naming its line', async () => {
    const run = await startRun(h, admin, { script: "const all = []\nfor (;;) all.push('x'.repeat(1 << 20) + all.length)" }, 's1')
    const events = await runEvents(h, admin, run.id, undefined, 30_000)
    expect(endOf(events)).toEqual({
      stopReason: 'error',
      limit: 'memory',
      error: expect.stringMatching(
        /^MEMORY_LIMIT: the script ran out of its 64 MiB of memory: InternalError: out of memory \(line 2, column \d+\)$/,
      ),
      agentsStarted: 0,
    })
    await expectValidLog(h, admin, run.id, events)
  })

  it("a thrown error's text is stored cut at MAX_WORKFLOW_ERROR_BYTES, saying so (it was stored whole: megabytes per run)", async () => {
    const script = "const e = new Error('y'); e.name = '€'.repeat(1e6); throw e"
    const run = await startRun(h, admin, { script }, 's1')
    const { error } = endOf(await runEvents(h, admin, run.id, undefined, 30_000))
    expect(Buffer.byteLength(error)).toBeLessThanOrEqual(MAX_WORKFLOW_ERROR_BYTES)
    expect(error).toMatch(new RegExp(`^(€){5000,} … \\(cut at ${MAX_WORKFLOW_ERROR_BYTES} bytes\\)$`))
    const detail = (await (await h.request('GET', `/v1/sessions/s1/workflows/${run.id}`, { token: admin })).json()) as any
    expect(detail.result.error).toBe(error)
  })

  it('the host bounds the nesting of a return value on its own, counting arrays and objects', () => {
    const nested = (depth: number) => JSON.parse(`${'[{"a":'.repeat(depth / 2)}1${'}]'.repeat(depth / 2)}`)
    expect(nestsDeeper(nested(MAX_WORKFLOW_RESULT_DEPTH), MAX_WORKFLOW_RESULT_DEPTH)).toBe(false)
    expect(nestsDeeper(nested(MAX_WORKFLOW_RESULT_DEPTH + 2), MAX_WORKFLOW_RESULT_DEPTH)).toBe(true)
    expect(nestsDeeper(nested(1_000_000), MAX_WORKFLOW_RESULT_DEPTH)).toBe(true)
    expect(nestsDeeper('text', 0)).toBe(false)
  })

  it("the host cuts an error's text on its own, never inside a character", () => {
    expect(within('short', 16)).toBe('short')
    const note = ' … (cut at 40 bytes)'
    expect(within('€'.repeat(20), 40)).toBe(`${'€'.repeat(6)}${note}`)
    expect(Buffer.byteLength(within('€'.repeat(20), 40))).toBeLessThanOrEqual(40)
  })

  it('limits are bounded, default when omitted, and part of what an Idempotency-Key repeats', async () => {
    for (const limits of [{ wallTimeMs: 50 }, { cpuTimeMs: 10 * 60_000 + 1 }, { wallTimeMs: 1.5 }, { memoryBytes: 1 }]) {
      const response = await start(admin, 's1', { script: 'return 1', limits })
      expect([response.status, ((await response.json()) as any).error.code], JSON.stringify(limits)).toEqual([400, 'request/invalid'])
    }
    const plain = await startRun(h, admin, { script: 'return 1' }, 's1')
    expect(plain.limits).toEqual({ wallTimeMs: DEFAULT_WORKFLOW_WALL_TIME_MS, cpuTimeMs: DEFAULT_WORKFLOW_CPU_TIME_MS })
    const keyed = (limits: object) =>
      h.request('POST', '/v1/sessions/s1/workflows', {
        token: admin,
        body: { script: 'return 2', limits },
        headers: { 'idempotency-key': 'k-limits' },
      })
    expect((await keyed({ cpuTimeMs: 1000 })).status).toBe(201)
    expect((await keyed({ cpuTimeMs: 1000 })).status).toBe(200)
    expect((await keyed({ cpuTimeMs: 2000 })).status).toBe(422)
  })
})
