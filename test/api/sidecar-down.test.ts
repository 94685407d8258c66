/**
 * With the sidecar unreachable: every delegated route answers 503 `sidecar/unavailable` quickly,
 * while the registry, terminal list/info (served from libSQL) and health keep working.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { createServer as createHttpServer } from 'node:http'
import { createServer, type AddressInfo, type Socket } from 'node:net'
import { join } from 'node:path'
import type { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createApp } from '../../api/app.ts'
import type { AppEnv } from '../../api/deps.ts'
import { nodeFetch } from '../../api/runtime/node-transport.ts'
import { SidecarClient } from '../../api/sidecar-client.ts'
import { GRANTS } from '../../schema/grants.ts'
import { SIDECAR_SLOW_CALL_TIMEOUT_MS } from '../../api/tuning.ts'
import { hostGenerations, terminals } from '../../storage/tables.ts'
import { freePort } from '../support/ports.ts'
import { send, startHarness, type Harness } from './harness.ts'

let h: Harness
let down: Hono<AppEnv>
let downViaFetch: Hono<AppEnv>
let admin: string
let dir: string

beforeAll(async () => {
  h = await startHarness()
  admin = await h.token(GRANTS)
  dir = join(h.dir, 'ws')
  mkdirSync(dir)
  dir = realpathSync(dir)
  await h.request('POST', '/v1/workspaces', { token: admin, body: { path: dir } })
  for (const id of ['s1', 's2']) await h.request('POST', '/v1/sessions', { token: admin, body: { id, cwd: dir } })
  // Rows as the sidecar writes them: one live, one retired, and another session's terminal.
  const [{ generation }] = await h.storage.db.insert(hostGenerations).values({ pid: 1 }).returning()
  const row = { shellPath: '/bin/bash', shellArgs: ['-l'], cwd: dir, cols: 80, rows: 24, hostGeneration: generation! }
  await h.storage.db.insert(terminals).values([
    { ...row, sessionId: 's1', id: 'live', title: 'live one', state: 'running', createdAt: 1, updatedAt: 1 },
    { ...row, sessionId: 's1', id: 'old', title: 'retired one', state: 'retired', exitCode: 0, createdAt: 2, updatedAt: 3, closedAt: 3 },
    { ...row, sessionId: 's2', id: 'live', title: 'not yours', state: 'running', createdAt: 1, updatedAt: 1 },
  ])
  const nowhere = `http://127.0.0.1:${await freePort()}`
  down = createApp({ ...h.deps, sidecar: new SidecarClient({ url: nowhere, secret: 'x', fetch: nodeFetch }) })
  downViaFetch = createApp({ ...h.deps, sidecar: new SidecarClient({ url: nowhere, secret: 'x' }) })
})
afterAll(async () => {
  await h?.close()
})

const T = '/v1/sessions/s1/terminals/live'

describe('sidecar unreachable', () => {
  it.each([
    ['GET', '/v1/sessions/s1/terminal-environment', undefined],
    ['GET', '/v1/sessions/s1/shells', undefined],
    ['PUT', T, { cols: 80, rows: 24 }],
    ['PATCH', T, { title: 'x' }],
    ['DELETE', T, undefined],
    ['POST', `${T}/input`, 'ls\r'],
    ['POST', `${T}/resize`, { cols: 90, rows: 30 }],
    ['GET', `${T}/follow?attachment=a1`, undefined],
    ['GET', `${T}/retain`, undefined],
    ['GET', `${T}/output?after=0`, undefined],
    ['GET', `${T}/output/watch?after=0`, undefined],
    ['POST', '/v1/workspaces', { path: '/tmp' }],
    ['POST', '/v1/sessions', { cwd: '/tmp' }],
    ['GET', '/v1/workspaces/resolve?path=/tmp', undefined],
  ])('%s %s → 503 sidecar/unavailable', async (method, path, body) => {
    // Both transports: node:http (the Node entry) and fetch (Deno, Workers).
    for (const app of [down, downViaFetch]) {
      const response = await send(app, method, path, { token: admin, body })
      expect(response.status).toBe(503)
      expect(((await response.json()) as any).error.code).toBe('sidecar/unavailable')
    }
  })

  it('gives up on a sidecar that accepts connections but never answers (503, not a hang)', async () => {
    const sockets: Socket[] = []
    const silent = createServer((socket) => void sockets.push(socket))
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r))
    try {
      const port = (silent.address() as AddressInfo).port
      // Every call, quick or allowed seconds of real work (create, replay, a follow's snapshot),
      // gives up as soon as the sidecar's health does not answer either (SIDECAR_LIVENESS_TIMEOUT_MS
      // after the first liveness check), long before its own budget. Both transports at once.
      const started = Date.now()
      const statuses = await Promise.all(
        [nodeFetch, undefined].flatMap((transport) => {
          const app = createApp({
            ...h.deps,
            sidecar: new SidecarClient({ url: `http://127.0.0.1:${port}`, secret: 'x', fetch: transport }),
          })
          return (
            [
              ['GET', '/v1/sessions/s1/terminal-environment'],
              ['POST', `${T}/input`],
              ['GET', '/v1/sessions/s1/shells'],
              ['GET', `${T}/output?after=0`],
              ['GET', `${T}/follow?attachment=a1`],
              ['PUT', T],
            ] as const
          ).map(async ([method, path]) => {
            const body = method === 'PUT' ? { cols: 80, rows: 24 } : method === 'POST' ? 'x' : undefined
            return (await send(app, method, path, { token: admin, body })).status
          })
        }),
      )
      expect(statuses).toEqual(Array(12).fill(503))
      expect(Date.now() - started).toBeLessThan(SIDECAR_SLOW_CALL_TIMEOUT_MS / 2)
    } finally {
      for (const socket of sockets) socket.destroy()
      silent.close()
    }
  })

  it('never cuts a stream that answered while its liveness check was still out', async () => {
    // A busy sidecar: its health answers late, the follow's headers come after the check started.
    const slow = createHttpServer((request, response) => {
      if (request.url === '/v1/health')
        return void setTimeout(() => response.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true}'), 2_500)
      setTimeout(() => {
        response.writeHead(200, { 'content-type': 'text/event-stream' })
        let n = 0
        const tick = setInterval(() => {
          response.write(`event: output\ndata: ${n++}\n\n`)
          if (n === 6) {
            clearInterval(tick)
            response.end()
          }
        }, 500)
      }, 1_500)
    })
    await new Promise<void>((r) => slow.listen(0, '127.0.0.1', r))
    try {
      const client = new SidecarClient({ url: `http://127.0.0.1:${(slow.address() as AddressInfo).port}`, secret: 'x', fetch: nodeFetch })
      const response = await client.follow('s1', 'live', { attachment: 'a1' }, new AbortController().signal)
      const text = await response.text()
      expect(text.match(/event: output/g)).toHaveLength(6)
    } finally {
      slow.close()
    }
  })

  it('still serves the registry, health and terminal list/info from the database', async () => {
    expect((await send(down, 'GET', '/v1/workspaces', { token: admin })).status).toBe(200)
    expect((await send(down, 'POST', `/v1/sessions/s1/archive`, { token: admin })).status).toBe(200)
    const health = (await (await send(down, 'GET', '/v1/health')).json()) as any
    expect(health).toMatchObject({ status: 'degraded', database: { reachable: true }, sidecar: { reachable: false } })

    const list = (await (await send(down, 'GET', '/v1/sessions/s1/terminals', { token: admin })).json()) as any
    expect(list.terminals.map((t: any) => [t.id, t.state, t.title])).toEqual([
      ['live', 'running', 'live one'],
      ['old', 'retired', 'retired one'],
    ])
    expect(list.terminals[0]).toMatchObject({
      sessionId: 's1',
      shell: { path: '/bin/bash', args: ['-l'], name: 'bash' },
      controllerId: null,
    })
    const old = (await (await send(down, 'GET', '/v1/sessions/s1/terminals/old', { token: admin })).json()) as any
    expect(old).toMatchObject({ id: 'old', state: 'retired', exitCode: 0 })
    const missing = await send(down, 'GET', '/v1/sessions/s1/terminals/nope', { token: admin })
    expect(missing.status).toBe(404)
    expect(((await missing.json()) as any).error.code).toBe('terminal/not-found')
  })

  it("serves list/info with terminals:display alone, and only within the token's sessions", async () => {
    const display = await h.token(['terminals:display'], ['s1'])
    expect((await send(down, 'GET', '/v1/sessions/s1/terminals/live', { token: display })).status).toBe(200)
    const foreign = await send(down, 'GET', '/v1/sessions/s2/terminals/live', { token: display })
    expect(foreign.status).toBe(404)
    expect(((await foreign.json()) as any).error.code).toBe('session/not-found')
  })
})

describe('a sidecar with the wrong secret', () => {
  it("is the API's problem (503), never passed on as the client's 401", async () => {
    const wrong = createApp({ ...h.deps, sidecar: new SidecarClient({ url: h.sidecar.url, secret: 'not-the-secret', fetch: nodeFetch }) })
    const response = await send(wrong, 'POST', '/v1/workspaces', { token: admin, body: { path: dir } })
    expect(response.status).toBe(503)
    expect(((await response.json()) as any).error.code).toBe('sidecar/unavailable')
  })
})
