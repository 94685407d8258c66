/**
 * MCP `send_keys` and `run_workflow` when the sidecar stalls under their request (api/mcp/keyed.ts):
 * it carries an Idempotency-Key and is retried within the call, so keys the stalled sidecar typed
 * as it resumed are not typed again, and a run it started is not started again; a stall that
 * outlasts the call's retry bound is answered as an error that says the outcome is unknown. The
 * MCP SDK's own client talks to the app; the app's sidecar client stops the real sidecar (SIGSTOP)
 * as that request leaves, and resumes it once the request failed (the API's 503), or, for the
 * bound, once the call has answered.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../api/app.ts'
import { nodeFetch } from '../../api/runtime/node-transport.ts'
import { SidecarClient } from '../../api/sidecar-client.ts'
import { GRANTS } from '../../schema/grants.ts'
import { callTool, errorOf, factsOf } from '../support/mcp.ts'
import { waitFor } from '../support/ports.ts'
import { outputText, startHarness, TUNING, type Harness } from './harness.ts'

let h: Harness
let token: string
const clients: Client[] = []
/** Set by a test: the next request to `path` (input, or a workflow start) stops the sidecar until `resume` says. */
let stallNext: { path: RegExp; resume: 'after-attempt' | 'by-test' } | undefined
const INPUT = /\/keys$/
const START = /\/workflows$/
let stalledPid: number | undefined

/** Through the app's own sidecar client: stops the sidecar as the chosen request leaves. */
const stallingFetch: typeof fetch = async (input, init) => {
  const url = input instanceof Request ? input.url : String(input)
  const stall = init?.method === 'POST' && stallNext?.path.test(url) ? stallNext : undefined
  if (!stall) return nodeFetch(input, init)
  stallNext = undefined
  stalledPid = h.sidecar.pid
  process.kill(stalledPid, 'SIGSTOP')
  try {
    return await nodeFetch(input, init)
  } finally {
    if (stall.resume === 'after-attempt') resume()
  }
}

function resume(): void {
  if (stalledPid === undefined) return
  process.kill(stalledPid, 'SIGCONT')
  stalledPid = undefined
}

/** An MCP client of an app over the harness's database and sidecar (retrying for `retryMs`). */
async function mcp(retryMs?: number): Promise<Client> {
  const sidecar = new SidecarClient({ url: h.sidecar.url, secret: h.sidecar.secret, fetch: stallingFetch })
  const app = createApp({ ...h.deps, sidecar, tuning: { ...TUNING, mcpRetryMs: retryMs } })
  const client = new McpClient({ name: 'termkeep-test', version: '1' })
  const transport = new StreamableHTTPClientTransport(new URL('http://localhost/mcp'), {
    requestInit: { headers: { authorization: `Bearer ${token}` } },
    fetch: async (url, init) => app.request(String(url), init),
  })
  await client.connect(transport)
  clients.push(client)
  return client
}

beforeAll(async () => {
  h = await startHarness()
  token = await h.token(GRANTS)
  const dir = realpathSync((mkdirSync(join(h.dir, 'ws'), { recursive: true }), join(h.dir, 'ws')))
  await h.request('POST', '/v1/sessions', { token, body: { id: 's1', cwd: dir } })
}, 60_000)
afterAll(async () => {
  resume()
  for (const client of clients) await client.close().catch(() => {})
  await h?.close()
})

const output = (tid: string) => outputText(h, token, `/v1/sessions/s1/terminals/${tid}`)

const count = (text: string, marker: string) => text.split(marker).length - 1

/** Sends a last command and waits for its output: input is ordered, so everything before it ran. */
async function settled(client: Client, tid: string, n: number): Promise<string> {
  factsOf(await callTool(client, 'send_keys', { sid: 's1', tid, text: `echo END${n}-$((40+2))`, keys: ['Enter'] }))
  let text = ''
  await waitFor(async () => (text = await output(tid)).includes(`END${n}-42`), 20_000, 'the last command')
  return text
}

describe('send_keys through a stalled sidecar', () => {
  it('retries the input under its key within the call: the keys are typed once', async () => {
    const client = await mcp()
    expect((await h.request('PUT', '/v1/sessions/s1/terminals/t1', { token, body: { cols: 80, rows: 24 } })).status).toBe(201)
    stallNext = { path: INPUT, resume: 'after-attempt' }
    const sent = factsOf(await callTool(client, 'send_keys', { sid: 's1', tid: 't1', text: 'echo MCP-$((3*4))', keys: ['Enter'] }))
    expect(stallNext).toBeUndefined() // the stall happened
    expect(sent).toMatchObject({ sent: 'echo MCP-$((3*4))\r'.length })
    expect(count(await settled(client, 't1', 1), 'MCP-12')).toBe(1)
  })

  it('answers an error saying the outcome is unknown when the input never lands within the bound', async () => {
    const client = await mcp(1_000)
    expect((await h.request('PUT', '/v1/sessions/s1/terminals/t2', { token, body: { cols: 80, rows: 24 } })).status).toBe(201)
    stallNext = { path: INPUT, resume: 'by-test' }
    let refused: ReturnType<typeof errorOf>
    try {
      refused = errorOf(await callTool(client, 'send_keys', { sid: 's1', tid: 't2', text: 'echo LATE-$((5*5))', keys: ['Enter'] }))
    } finally {
      resume()
    }
    expect(refused).toMatchObject({
      code: 'sidecar/unavailable',
      outcome: 'unknown',
      message: expect.stringContaining('outcome is unknown'),
    })
    // Unknown indeed: as it resumes, the sidecar types it or refuses it (the call's follow, and
    // so its control, ended meanwhile), which one depends on the order it sees the two in; never twice.
    expect(count(await settled(await mcp(), 't2', 2), 'LATE-25')).toBeLessThanOrEqual(1)
  })

  it('run_workflow retries the start under its key: the run the stalled sidecar started is answered, once', async () => {
    const client = await mcp()
    const runs = async () =>
      ((await (await h.request('GET', '/v1/sessions/s1/workflows?limit=100', { token })).json()) as any).runs.map((r: any) => r.id)
    const before = await runs()
    stallNext = { path: START, resume: 'after-attempt' }
    const answer = factsOf(
      await callTool(client, 'run_workflow', { sid: 's1', script: "log('once'); return 7", wait: true, timeoutMs: 20_000 }),
    )
    expect(stallNext).toBeUndefined() // the stall happened
    expect(answer.run).toMatchObject({ status: 'completed', result: { value: 7 } })
    expect((await runs()).filter((id: string) => !before.includes(id))).toEqual([answer.run.id])
  })
})
