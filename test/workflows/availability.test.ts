/**
 * Where scripts cannot be confined as configured, no run starts and health says why: real
 * sidecars whose engine does not load (WebAssembly broken by a preload) or that find no `unshare`
 * while namespaces are required (the default). And the fallback the operator asked for
 * (TERMKEEP_WORKFLOW_NAMESPACES=off, the test switch; `optional` is the same where namespaces are
 * missing): runs start, script processes share the sidecar's PID namespace, and health says so.
 */
import { readFileSync, readlinkSync, statSync } from 'node:fs'
import { afterAll, describe, expect, it } from 'vitest'
import { startHarness, type Harness } from '../api/harness.ts'
import { AGENTS_ENV, endOf, eventually, prepare, runEvents, startRun } from './support.ts'

/** A preload that makes instantiating the engine's WebAssembly (and nothing else's: tsx has its
 * own) fail, as where it cannot be compiled. */
const ENGINE_WASM_BYTES = statSync(new URL('emscripten-module.wasm', import.meta.resolve('@jitl/quickjs-wasmfile-release-sync'))).size
const BROKEN_WASM = `data:text/javascript,${encodeURIComponent(
  `const instantiate = WebAssembly.instantiate; WebAssembly.instantiate = (binary, imports) => binary?.byteLength === ${ENGINE_WASM_BYTES} ? Promise.reject(new Error('injected: no WebAssembly')) : instantiate(binary, imports)`,
)}`

const harnesses: Harness[] = []
afterAll(async () => {
  await Promise.all(harnesses.map((h) => h.close()))
})
async function harness(options: Parameters<typeof startHarness>[0]) {
  const h = await startHarness(options)
  harnesses.push(h)
  return { h, ...(await prepare(h)) }
}

/** Health once the sidecar has found out how scripts run (it leaves `workflows` out until then). */
async function health(h: Harness): Promise<any> {
  let body: any
  await eventually(async () => {
    const response = await h.request('GET', '/v1/health')
    expect(response.status).toBe(200)
    body = await response.json()
    return body.sidecar.workflows !== undefined
  })
  return body
}

describe('refused, and health says why', () => {
  it.each([
    [
      'the engine does not load',
      { sidecarEnv: AGENTS_ENV, sidecarNodeArgs: ['--import', BROKEN_WASM] },
      /^the script engine \(QuickJS, WebAssembly\) does not load: Aborted\(Error: injected: no WebAssembly\)/,
    ],
    [
      'namespaces are required and there is no unshare',
      { sidecarEnv: { ...AGENTS_ENV, PATH: '/nonexistent', TERMKEEP_WORKFLOW_NAMESPACES: 'required' } },
      /^script processes cannot get namespaces of their own here: unshare \(util-linux\) is not installed\. Set TERMKEEP_WORKFLOW_NAMESPACES=optional/,
    ],
  ])('%s', async (_name, options, reason) => {
    const { h, token } = await harness(options)
    const body = await health(h)
    expect(body.status).toBe('degraded')
    expect(body.sidecar.workflows).toEqual({ available: false, namespaces: false, reason: expect.stringMatching(reason) })
    expect(body.problems).toContainEqual({ code: 'workflows/unavailable', message: expect.stringMatching(reason), source: 'sidecar' })
    const refused = await h.request('POST', '/v1/sessions/s1/workflows', { token, body: { script: 'return 1' } })
    expect(refused.status).toBe(409)
    const { error } = (await refused.json()) as any
    expect(error.code).toBe('workflow/unavailable')
    expect(error.message).toMatch(/^workflow runs cannot start on this server: /)
    const { runs } = (await (await h.request('GET', '/v1/sessions/s1/workflows', { token })).json()) as any
    expect(runs).toEqual([])
  })
})

describe('the fallback, asked for (TERMKEEP_WORKFLOW_NAMESPACES=off)', () => {
  it('runs start without namespaces of their own, and health says so', async () => {
    const { h, token } = await harness({ sidecarEnv: { ...AGENTS_ENV, TERMKEEP_WORKFLOW_NAMESPACES: 'off' } })
    const body = await health(h)
    expect(body.status).toBe('ok')
    expect(body.sidecar.workflows).toEqual({
      available: true,
      namespaces: false,
      reason: 'scripts run without namespaces of their own: TERMKEEP_WORKFLOW_NAMESPACES=off',
    })

    const held = await startRun(h, token, { script: "await agent('held [sleep:600000]')" })
    await runEvents(h, token, held.id, (events) => events.some((e) => e.event === 'workflow/agent-start'))
    const [row] = (await h.storage.client.execute({ sql: 'SELECT pid FROM workflow_runs WHERE id = ?', args: [held.id] })).rows
    const pid = Number(row.pid)
    // The script process itself (no unshare before it), in the sidecar's PID namespace.
    expect(readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0')[0]).toBe(process.execPath)
    expect(readlinkSync(`/proc/${pid}/ns/pid`)).toBe(readlinkSync('/proc/self/ns/pid'))
    expect((await h.request('POST', `/v1/sessions/s1/workflows/${held.id}/cancel`, { token, body: {} })).status).toBe(200)

    // The engine holds alike: the issue's escape finds no `process`.
    const run = await startRun(h, token, {
      script: "try { await import('node:fs') } catch (e) { return typeof e.constructor.constructor('return process')() }",
    })
    expect(endOf(await runEvents(h, token, run.id))).toMatchObject({
      stopReason: 'error',
      error: "ReferenceError: 'process' is not defined (line 1, column 102)",
    })
  })
})
