/**
 * The per-session terminal limits through the API and MCP, against a real sidecar: only running
 * terminals count toward MAX_TERMINALS_PER_SESSION (an agent's `run_command` leaves exited ones
 * behind for inspection), the refusal says what counts and how to free a place, and exited
 * terminals kept open are bounded by MAX_EXITED_TERMINALS_PER_SESSION, oldest closed first.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GRANTS } from '../../schema/grants.ts'
import { MAX_EXITED_TERMINALS_PER_SESSION, MAX_TERMINALS_PER_SESSION } from '../../schema/limits.ts'
import { waitFor } from '../support/ports.ts'
import { callTool, errorOf, factsOf, mcpStack, type McpStack, textOf } from '../support/mcp.ts'
import { outputText, startHarness, type Harness } from './harness.ts'

let h: Harness
let stack: McpStack
let agent: Client
let token: string
let dir: string

const T = (sid: string, tid: string) => `/v1/sessions/${sid}/terminals/${tid}`
const info = async (sid: string, tid: string) => (await (await h.request('GET', T(sid, tid), { token })).json()) as any

beforeAll(async () => {
  h = await startHarness()
  dir = realpathSync((mkdirSync(join(h.dir, 'ws', 'limits'), { recursive: true }), join(h.dir, 'ws', 'limits')))
  token = await h.token(GRANTS)
  for (const id of ['s-run', 's-kept']) await h.request('POST', '/v1/sessions', { token, body: { id, cwd: dir } })
  stack = await mcpStack(h)
  agent = await stack.client(token)
}, 60_000)

afterAll(async () => {
  await stack?.close()
  await h?.close()
})

describe('running terminals per session', () => {
  it('lets run_command go on past the limit: exited terminals do not count and stay readable', async () => {
    const calls = MAX_TERMINALS_PER_SESSION + 4
    for (let i = 0; i < calls; i++) {
      const result = await callTool(agent, 'run_command', { sid: 's-run', tid: `r${i}`, command: `echo out-${i}` })
      expect(result.isError, textOf(result)).toBeFalsy()
      expect(factsOf(result)).toMatchObject({ exitCode: 0, timedOut: false })
    }
    // Every one of them is still kept: its record, its journal and its screen.
    expect((await info('s-run', 'r0')).state).toBe('exited')
    expect(await outputText(h, token, T('s-run', 'r0'))).toContain('out-0')
    const screen = await callTool(agent, 'read_screen', { sid: 's-run', tid: 'r1' })
    expect(textOf(screen)).toContain('out-1')
  })

  it('refuses a create beyond the running ones, saying what counts and how to free a place', async () => {
    const ids = Array.from({ length: MAX_TERMINALS_PER_SESSION }, (_, i) => `live${i}`)
    try {
      for (const tid of ids) {
        const r = await h.request('PUT', T('s-run', tid), { token, body: { cols: 80, rows: 24, command: 'exec sleep 300' } })
        expect(r.status, tid).toBe(201)
      }
      const over = await callTool(agent, 'create_terminal', { sid: 's-run', tid: 'one-more' })
      const error = errorOf(over)
      expect(error).toMatchObject({ code: 'terminal/limit-reached', limit: MAX_TERMINALS_PER_SESSION })
      expect((error.running as string[]).sort()).toEqual([...ids].sort())
      expect(error.message).toMatch(/running terminals per session/)
      expect(error.message).toMatch(/exited does not count/)
      expect(error.message).toMatch(/close_terminal/)
      // A program that ends frees its place.
      await h.request('DELETE', T('s-run', ids[0]), { token })
      const again = await h.request('PUT', T('s-run', 'one-more'), { token, body: { cols: 80, rows: 24, command: 'true' } })
      expect(again.status).toBe(201)
    } finally {
      await Promise.all(ids.map((tid) => h.request('DELETE', T('s-run', tid), { token })))
    }
  })
})

describe('exited terminals kept per session', () => {
  it('closes the oldest exited terminals beyond the kept ones at the next create, and keeps their records', async () => {
    const exited = MAX_EXITED_TERMINALS_PER_SESSION + 2
    // In batches below the running limit, each waited until exited.
    for (let at = 0; at < exited; at += MAX_TERMINALS_PER_SESSION) {
      const batch = Array.from({ length: Math.min(MAX_TERMINALS_PER_SESSION, exited - at) }, (_, i) => `k${at + i}`)
      for (const tid of batch) await h.request('PUT', T('s-kept', tid), { token, body: { cols: 80, rows: 24, command: 'echo kept' } })
      for (const tid of batch) await waitFor(async () => (await info('s-kept', tid)).state === 'exited', 10_000)
    }
    const next = await h.request('PUT', T('s-kept', 'after'), { token, body: { cols: 80, rows: 24, command: 'true' } })
    expect(next.status).toBe(201)
    // The two oldest are closed (retired); their rows stay, with their exit.
    for (const tid of ['k0', 'k1']) await waitFor(async () => (await info('s-kept', tid)).state === 'retired', 10_000)
    expect(await info('s-kept', 'k0')).toMatchObject({ state: 'retired', exitCode: 0 })
    const gone = await h.request('GET', `${T('s-kept', 'k0')}/output?after=0`, { token })
    expect(gone.status).toBe(410)
    // The newer ones are kept, output and all.
    expect((await info('s-kept', 'k2')).state).toBe('exited')
    expect(await outputText(h, token, T('s-kept', 'k2'))).toContain('kept')
  })
})
