/**
 * Bad input: every failure is `{error:{code,message}}` with a 4xx status (never hono's or the
 * validator's default body, never a 500), and refused input changes nothing. Plus the OpenAPI
 * document: generated from the same schemas, covering every mounted route of the design table.
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GRANTS } from '../../schema/grants.ts'
import { MAX_INPUT_BYTES, MAX_JSON_BODY_BYTES, MAX_JSON_DEPTH, MAX_RESOURCE_BYTES } from '../../schema/limits.ts'
import { startHarness, type Harness } from './harness.ts'
import { openApiPath, ROUTES } from './route-table.ts'

let h: Harness
let admin: string
let wid: string

async function snapshot(): Promise<string> {
  const parts: unknown[] = []
  for (const t of ['workspaces', 'sessions', 'workspace_sessions', 'archived_sessions', 'registry_events', 'tokens']) {
    parts.push((await h.storage.client.execute(`SELECT * FROM ${t} ORDER BY rowid`)).rows)
  }
  return JSON.stringify(parts)
}

beforeAll(async () => {
  h = await startHarness()
  admin = await h.token(GRANTS)
  const dir = join(h.dir, 'ws')
  mkdirSync(dir)
  wid = ((await (await h.request('POST', '/v1/workspaces', { token: admin, body: { path: realpathSync(dir) } })).json()) as any).workspace
    .id
  await h.request('POST', '/v1/sessions', { token: admin, body: { id: 's1', cwd: dir } })
})
afterAll(async () => {
  await h?.close()
})

async function expectError(response: Response, status: number, code: string) {
  const body = (await response.json()) as any
  expect(response.status, JSON.stringify(body)).toBe(status)
  expect(Object.keys(body)).toEqual(['error'])
  expect(body.error.code).toBe(code)
  expect(typeof body.error.message).toBe('string')
}

describe('request validation', () => {
  const cases: Array<[string, string, unknown, number, string, Record<string, string>?]> = [
    ['POST', '/v1/workspaces', { path: 5 }, 400, 'request/invalid'],
    ['POST', '/v1/workspaces', {}, 400, 'request/invalid'],
    ['POST', '/v1/workspaces', '{"path": "/tmp"', 400, 'request/invalid', { 'content-type': 'application/json' }],
    ['POST', '/v1/workspaces', { path: '/tmp', title: 'x'.repeat(500) }, 400, 'request/invalid'],
    ['POST', '/v1/workspaces', { path: '/tmp\u0000x' }, 400, 'request/invalid'],
    ['GET', '/v1/workspaces/resolve', undefined, 400, 'request/invalid'],
    ['PATCH', '/v1/workspaces/bad!id', { title: 'x' }, 400, 'request/invalid'],
    ['PATCH', '/v1/workspaces/WID', { title: 42 }, 400, 'request/invalid'],
    ['PATCH', '/v1/workspaces/WID', { title: 'evil\u001b]0;PWNED\u0007' }, 400, 'request/invalid'],
    ['PATCH', '/v1/workspaces/WID', { title: '\u200b' }, 400, 'request/invalid'],
    ['PATCH', '/v1/sessions/s1/terminals/t1', { title: 'red\u001b[31m' }, 400, 'request/invalid'],
    ['POST', '/v1/workspaces/WID/move', { beforeId: 7 }, 400, 'request/invalid'],
    ['POST', '/v1/sessions', { cwd: '/tmp', id: 'no spaces' }, 400, 'request/invalid'],
    ['POST', '/v1/sessions', [], 400, 'request/invalid'],
    ['POST', '/v1/tokens', { name: 'x', grants: 'admin', sessions: 'all' }, 400, 'request/invalid'],
    ['PUT', '/v1/sessions/s1/terminals/t1', { cols: 1, rows: 24 }, 400, 'terminal/invalid-geometry'],
    ['PUT', '/v1/sessions/s1/terminals/t1', { cols: 1024, rows: 1024 }, 400, 'terminal/invalid-geometry'],
    ['PUT', '/v1/sessions/s1/terminals/t1', { cols: 80.5, rows: 24 }, 400, 'terminal/invalid-geometry'],
    ['PUT', '/v1/sessions/s1/terminals/t1', { cols: 80, rows: 24, title: '   ' }, 400, 'request/invalid'],
    ['PUT', '/v1/sessions/s1/terminals/bad.id', { cols: 80, rows: 24 }, 400, 'request/invalid'],
    ['POST', '/v1/sessions/s1/terminals/t1/resize', { cols: 80, rows: 0 }, 400, 'terminal/invalid-geometry'],
    ['PATCH', '/v1/sessions/s1/terminals/t1', { title: 'x'.repeat(121) }, 400, 'request/invalid'],
    ['GET', '/v1/sessions/s1/terminals/t1/output?after=-1', undefined, 400, 'request/invalid'],
    ['GET', '/v1/sessions/s1/terminals/t1/output?limit=0', undefined, 400, 'request/invalid'],
    ['GET', '/v1/sessions/s1/terminals/t1/output?limit=100000', undefined, 400, 'request/invalid'],
    ['GET', '/v1/sessions/s1/terminals/t1/follow', undefined, 400, 'request/invalid'],
    ['GET', '/v1/sessions/s1/terminals/t1/output/watch', undefined, 400, 'request/invalid', { 'last-event-id': 'x' }],
    ['POST', '/v1/sessions/s1/terminals/t1/input', 'x', 400, 'request/invalid', { 'termkeep-attachment': 'bad id' }],
    // JSON sent as another media type is refused, not read as {} (a move would go to the end).
    [
      'POST',
      '/v1/workspaces/WID/move',
      '{"beforeId":"ws_x"}',
      400,
      'request/invalid',
      { 'content-type': 'application/x-www-form-urlencoded' },
    ],
    ['POST', '/v1/workspaces', '{"path":"/tmp"}', 400, 'request/invalid', { 'content-type': 'text/plain;charset=UTF-8' }],
    ['PATCH', '/v1/workspaces/WID', '{"title":"y"}', 400, 'request/invalid', { 'content-type': 'multipart/form-data; boundary=x' }],
    // Every body is a JSON object: an array is not read as {} (a move would go to the end).
    ['POST', '/v1/workspaces/WID/move', [], 400, 'request/invalid'],
    ['POST', '/v1/workspaces/WID/move', [[['x']]], 400, 'request/invalid'],
    ['POST', '/v1/workspaces/WID/move', ' "ws_x"', 400, 'request/invalid', { 'content-type': 'application/json' }],
    // Nesting beyond MAX_JSON_DEPTH is refused before parsing, even inside an object.
    [
      'PATCH',
      '/v1/workspaces/WID',
      `{"title":${'['.repeat(MAX_JSON_DEPTH)}${']'.repeat(MAX_JSON_DEPTH)}}`,
      400,
      'request/invalid',
      { 'content-type': 'application/json' },
    ],
    // UTF-8 only: invalid bytes are not turned into U+FFFD, another charset is not read as UTF-8.
    [
      'PATCH',
      '/v1/workspaces/WID',
      new Uint8Array([...new TextEncoder().encode('{"title":"a'), 0xff, 0xfe, ...new TextEncoder().encode('"}')]),
      400,
      'request/invalid',
      { 'content-type': 'application/json' },
    ],
    [
      'PATCH',
      '/v1/workspaces/WID',
      '{"title":"caf\u00e9"}',
      400,
      'request/invalid',
      { 'content-type': 'application/json; charset=latin1' },
    ],
    // A lone surrogate is not text (it would be stored as U+FFFD).
    ['PATCH', '/v1/workspaces/WID', '{"title":"a\\ud800"}', 400, 'request/invalid', { 'content-type': 'application/json' }],
    ['POST', '/v1/tokens', { name: 'red\u001b[31m', grants: ['workspaces:read'], sessions: 'all' }, 400, 'request/invalid'],
    ['POST', '/v1/sessions/s1/attachments', { name: 'a\u0000b', content: 'x' }, 400, 'request/invalid'],
    ['POST', '/v1/sessions/s1/tool-results', { toolName: '\u200b', content: 'x' }, 400, 'request/invalid'],
  ]
  it.each(cases)('%s %s %j → %i %s', async (method, path, body, status, code, headers) => {
    const before = await snapshot()
    const response = await h.request(method, path.replace('WID', wid), { token: admin, body, headers })
    await expectError(response, status, code)
    expect(await snapshot()).toBe(before)
  })

  it('refuses JSON bodies over the limit with 413 before parsing', async () => {
    const before = await snapshot()
    const big = JSON.stringify({ path: '/tmp', title: 'x'.repeat(MAX_JSON_BODY_BYTES) })
    await expectError(
      await h.request('POST', '/v1/workspaces', { token: admin, body: big, headers: { 'content-type': 'application/json' } }),
      413,
      'request/too-large',
    )
    const stream = new ReadableStream({
      start(c) {
        c.enqueue(new TextEncoder().encode(big))
        c.close()
      },
    })
    const chunked = await h.app.request('/v1/workspaces', {
      method: 'POST',
      headers: { authorization: `Bearer ${admin}`, 'content-type': 'application/json' },
      body: stream,
      duplex: 'half',
    } as RequestInit)
    await expectError(chunked, 413, 'request/too-large')
    expect(await snapshot()).toBe(before)
  })

  it('refuses a deeply nested body before parsing it, on the routes that take 32 MiB bodies too', async () => {
    const deep = `{"name":"x","content":"y","z":${'['.repeat(MAX_RESOURCE_BYTES / 4)}${']'.repeat(MAX_RESOURCE_BYTES / 4)}}`
    const before = await snapshot()
    const response = await h.request('POST', '/v1/sessions/s1/attachments', {
      token: admin,
      body: deep,
      headers: { 'content-type': 'application/json' },
    })
    expect(((await response.clone().json()) as any).error.message).toContain(`more than ${MAX_JSON_DEPTH} levels`)
    await expectError(response, 400, 'request/invalid')
    expect(await snapshot()).toBe(before)
    // Depth counts only structure: brackets and escaped quotes inside strings are text.
    const name = `[{\\"${'['.repeat(100)}`
    const stored = await h.request('POST', '/v1/sessions/s1/tool-results', { token: admin, body: { toolName: 'brackets', content: name } })
    expect(stored.status, await stored.clone().text()).toBe(201)
    // A BOM before the object is allowed (RFC 8259 lets a parser ignore it).
    const bom = await h.request('PATCH', `/v1/workspaces/${wid}`, {
      token: admin,
      body: '\ufeff{"title":"with bom"}',
      headers: { 'content-type': 'application/json; charset=utf-8' },
    })
    expect(bom.status, await bom.clone().text()).toBe(200)
  })

  it('refuses input over 64 KiB with 413 terminal/input-too-large, counted or declared', async () => {
    const body = new Uint8Array(MAX_INPUT_BYTES + 1)
    const response = await h.request('POST', '/v1/sessions/s1/terminals/t1/input', { token: admin, body })
    await expectError(response, 413, 'terminal/input-too-large')
    // With a Content-Length (as every HTTP client sends a byte body) the header decides alone.
    const declared = await h.request('POST', '/v1/sessions/s1/terminals/t1/input', {
      token: admin,
      body,
      headers: { 'content-length': String(body.length) },
    })
    await expectError(declared, 413, 'terminal/input-too-large')
    const big = JSON.stringify({ path: '/tmp', title: 'x'.repeat(MAX_JSON_BODY_BYTES) })
    const json = { 'content-type': 'application/json', 'content-length': String(new TextEncoder().encode(big).length) }
    await expectError(await h.request('POST', '/v1/workspaces', { token: admin, body: big, headers: json }), 413, 'request/too-large')
  })

  it('never answers junk with a 500 (503 only while the sidecar lacks a route)', async () => {
    const junk: unknown[] = [
      null,
      [],
      'str',
      12,
      { path: {} },
      { title: { a: 1 } },
      { beforeId: null },
      { cols: '80', rows: '24' },
      { id: 'x'.repeat(200), cwd: '' },
    ]
    for (const row of ROUTES.filter((r) => r.home === 'api' && r.method !== 'GET')) {
      for (const body of junk) {
        const path = row.path.replace(':sid', 's1').replace(':tid', 't1').replace(':wid', wid).replace(':id', 'tok_x')
        const response = await h.request(row.method, path, {
          token: admin,
          body: JSON.stringify(body),
          headers: { 'content-type': 'application/json' },
        })
        expect(response.status, `${row.method} ${path} ${JSON.stringify(body)}`).not.toBe(500)
      }
    }
    for (const query of ['?path=', '?path=%00', '?after=1e999', '?after=99999999999999999999', '?limit=abc', '?attachment=']) {
      for (const row of ROUTES.filter((r) => r.home === 'api' && r.method === 'GET' && !/watch|follow|retain/.test(r.path))) {
        const path = row.path.replace(':sid', 's1').replace(':tid', 't1').replace(':wid', wid)
        const response = await h.request('GET', path + query, { token: admin })
        expect(response.status, `${path}${query}`).not.toBe(500)
      }
    }
  })
})

describe('GET /openapi.json', () => {
  let doc: any
  beforeAll(async () => {
    const response = await h.request('GET', '/openapi.json')
    expect(response.status).toBe(200)
    doc = await response.json()
  })

  it('is OpenAPI 3.1 and documents every mounted route of the design table', () => {
    expect(doc.openapi).toBe('3.1.0')
    const missing: string[] = []
    for (const row of ROUTES) {
      const mounted = h.app.routes.some((r) => r.method === row.method && r.path === row.path)
      if (row.home === 'api') expect(mounted, `${row.method} ${row.path} is mounted`).toBe(true)
      if (mounted && !doc.paths[openApiPath(row.path)]?.[row.method.toLowerCase()]) missing.push(`${row.method} ${row.path}`)
    }
    expect(missing).toEqual([])
  })

  it('says, for every route that can answer 503, whether that means "not done" or "unknown", and how to retry', () => {
    const kinds: Record<string, string> = {}
    for (const [path, methods] of Object.entries<any>(doc.paths)) {
      for (const [method, op] of Object.entries<any>(methods)) {
        const text = op.responses?.['503']?.description as string | undefined
        if (text === undefined) continue
        const kind = /Nothing was done/.test(text) ? 'not done' : /The outcome is unknown/.test(text) ? 'unknown' : 'unsaid'
        if (kind === 'unknown') expect(text, `${method} ${path}`).toMatch(/ Retry\b/)
        kinds[`${method.toUpperCase()} ${path}`] = kind
      }
    }
    expect(Object.entries(kinds).filter(([, kind]) => kind === 'unsaid')).toEqual([])
    const T = '/v1/sessions/{sid}/terminals/{tid}'
    for (const op of [
      `PUT ${T}`,
      `PATCH ${T}`,
      `DELETE ${T}`,
      `POST ${T}/input`,
      `POST ${T}/resize`,
      `GET ${T}/follow`,
      'POST /v1/sessions/{sid}/workflows',
    ]) {
      expect(kinds[op], op).toBe('unknown')
    }
    for (const op of [
      'POST /v1/workspaces',
      'POST /v1/sessions',
      'GET /v1/workspaces/resolve',
      `GET ${T}/output`,
      'GET /v1/sessions/{sid}/files/text',
    ])
      expect(kinds[op], op).toBe('not done')
    const input = doc.paths[`${T}/input`].post
    expect(input.parameters.map((p: any) => [p.in, p.name])).toContainEqual(['header', 'idempotency-key'])
    expect(input.description).toContain('Idempotency-Key')
    const start = doc.paths['/v1/sessions/{sid}/workflows'].post
    expect(start.parameters.map((p: any) => [p.in, p.name])).toContainEqual(['header', 'idempotency-key'])
    expect(start.responses['503'].description).toContain('same `Idempotency-Key`')
    expect(Object.keys(start.responses)).toEqual(expect.arrayContaining(['200', '201', '422']))
  })

  it('names, for every guarded route, exactly the grant of the design table', () => {
    const spell = (g: any) =>
      typeof g === 'string' ? g : 'anyOf' in g ? g.anyOf.join(' or ') : g.allOf.length ? g.allOf.join(' and ') : 'any valid token'
    for (const row of ROUTES) {
      const op = doc.paths[openApiPath(row.path)]?.[row.method.toLowerCase()]
      if (!op) continue
      expect(op['x-termkeep-grant'], `${row.method} ${row.path}`).toBe(row.grant === null ? undefined : spell(row.grant))
    }
  })

  it('derives request bodies and parameters from the validating schemas, and names the grant', () => {
    const create = doc.paths['/v1/workspaces'].post
    expect(create.requestBody.content['application/json'].schema.required).toContain('path')
    expect(create['x-termkeep-grant']).toBe('workspaces:write')
    expect(create.security).toEqual([{ bearer: [] }])
    const put = doc.paths['/v1/sessions/{sid}/terminals/{tid}'].put
    const cols = put.requestBody.content['application/json'].schema.properties.cols
    expect(cols).toMatchObject({ minimum: 2, maximum: 1024 })
    const follow = doc.paths['/v1/sessions/{sid}/terminals/{tid}/follow'].get
    expect(follow['x-termkeep-grant']).toBe('terminals:control and terminals:output')
    expect(follow.parameters.map((p: any) => `${p.in}:${p.name}`)).toEqual(
      expect.arrayContaining(['path:sid', 'path:tid', 'query:attachment']),
    )
    expect(follow.responses['200'].content['text/event-stream']).toBeDefined()
    expect(doc.paths['/v1/health'].get.security).toBeUndefined()
  })
})
