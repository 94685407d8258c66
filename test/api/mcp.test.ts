/**
 * `/mcp` end to end: the MCP SDK's own Client (Streamable HTTP) over real HTTP against the Node
 * API, a real sidecar process with real PTYs, and a libSQL database. Tools are listed per grant,
 * refused without their routes' grants (changing nothing), and drive real terminals and files.
 */
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs'
import { request as httpRequest } from 'node:http'
import { join } from 'node:path'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GRANTS } from '../../schema/grants.ts'
import { extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js'
import { callTool, errorOf, factsOf, mcpClient, mcpStack, type McpStack, textOf } from '../support/mcp.ts'
import { readEvents, startHarness, type Harness } from './harness.ts'

let h: Harness
let stack: McpStack
let admin: Client
let adminToken: string
let dir: string
const client = (token: string) => stack.client(token)

/** Keywords whose value may be a boolean (JSON Schema); anywhere else `true`/`false` stands for a schema. */
const BOOLEAN_VALUED = new Set(['additionalProperties', 'unevaluatedProperties', 'uniqueItems', 'exclusiveMinimum', 'exclusiveMaximum'])
/** Keywords that say something about the value: a schema with none accepts anything (`{}`). */
const CONSTRAINING = new Set(['type', 'enum', 'const', 'anyOf', 'oneOf', 'allOf', 'not', '$ref', 'properties', 'items', 'pattern'])

/** What MCP Inspector's `tools/list --strict` reports (its schema lint): untyped schemas, `type`
 * arrays, bare boolean schemas, remote refs; as paths into the schema. */
function schemaFindings(node: unknown, path = '', keyword?: string): string[] {
  if (typeof node === 'boolean') return keyword !== undefined && BOOLEAN_VALUED.has(keyword) ? [] : [`${path}: a bare boolean schema`]
  if (typeof node !== 'object' || node === null) return []
  const schema = node as Record<string, unknown>
  const found: string[] = []
  if (!Object.keys(schema).some((key) => CONSTRAINING.has(key))) found.push(`${path || '(root)'}: constrains nothing`)
  if (Array.isArray(schema.type)) found.push(`${path}: type is an array`)
  if (typeof schema.$ref === 'string' && !schema.$ref.startsWith('#')) found.push(`${path}: a remote $ref`)
  for (const key of ['properties', '$defs', 'patternProperties']) {
    for (const [name, sub] of Object.entries((schema[key] as Record<string, unknown>) ?? {}))
      found.push(...schemaFindings(sub, `${path}.${key}.${name}`, key))
  }
  for (const key of ['anyOf', 'oneOf', 'allOf']) {
    for (const [i, sub] of ((schema[key] as unknown[]) ?? []).entries()) found.push(...schemaFindings(sub, `${path}.${key}[${i}]`, key))
  }
  for (const key of ['items', 'additionalProperties', 'propertyNames', 'not']) {
    if (key in schema) found.push(...schemaFindings(schema[key], `${path}.${key}`, key))
  }
  return found
}

async function terminalRows(): Promise<unknown[]> {
  return (await h.storage.client.execute('SELECT session_id, id, state FROM terminals ORDER BY rowid')).rows
}

beforeAll(async () => {
  h = await startHarness()
  dir = realpathSync((mkdirSync(join(h.dir, 'ws', 'mcp'), { recursive: true }), join(h.dir, 'ws', 'mcp')))
  writeFileSync(join(dir, 'notes.txt'), `${['one', 'two', 'three', 'four', 'five'].join('\n')}\n`)
  adminToken = await h.token(GRANTS)
  await h.request('POST', '/v1/workspaces', { token: adminToken, body: { path: dir } })
  await h.request('POST', '/v1/sessions', { token: adminToken, body: { id: 's1', cwd: dir } })
  stack = await mcpStack(h)
  admin = await client(adminToken)
}, 60_000)

afterAll(async () => {
  await stack?.close()
  await h?.close()
})

describe('tools/list and authority', () => {
  it('shows an admin token every tool, each with a JSON Schema object input', async () => {
    const { tools } = await admin.listTools()
    const names = tools.map((t) => t.name)
    expect(names).toEqual(
      expect.arrayContaining([
        'list_workspaces',
        'list_hosts',
        'add_workspace',
        'create_session',
        'list_terminals',
        'create_terminal',
        'run_command',
        'send_keys',
        'read_screen',
        'wait_for',
        'read_output',
        'close_terminal',
        'read_file',
        'list_directory',
        'stat_file',
        'read_text',
      ]),
    )
    for (const tool of tools) expect(tool.inputSchema.type, tool.name).toBe('object')
    const create = tools.find((t) => t.name === 'create_terminal')!
    // From the route's schemas: geometry bounds of CreateTerminal, the id pattern of TerminalParams.
    expect(create.inputSchema.properties).toMatchObject({ cols: { minimum: 2, maximum: 1024 }, tid: { pattern: '^[\\w-]{1,128}$' } })
    expect(create.inputSchema.required).toEqual(['sid'])
    const file = tools.find((t) => t.name === 'read_file')!
    expect(file.inputSchema.properties).toMatchObject({ offset: { type: 'integer', minimum: 1 } })
  })

  it('gives every tool a schema a strict client takes: every node constrains, no type unions, no bare booleans', async () => {
    const { tools } = await admin.listTools()
    const findings = tools.flatMap((tool) => schemaFindings(tool.inputSchema).map((finding) => `${tool.name}: ${finding}`))
    expect(findings).toEqual([])
    const run = tools.find((t) => t.name === 'run_workflow')!.inputSchema as any
    expect(run.properties.input).toEqual({ $ref: '#/$defs/JsonValue' })
    expect(run.$defs.JsonValue.anyOf.map((branch: any) => branch.type)).toEqual(['string', 'number', 'boolean', 'null', 'array', 'object'])
  })

  it('shows a narrow token only the tools its grants allow; the others are refused and change nothing', async () => {
    const narrow = await client(await h.token(['terminals:screen']))
    const names = (await narrow.listTools()).tools.map((t) => t.name).sort()
    expect(names).toEqual(['list_commands', 'read_screen', 'wait_for'])
    const before = await terminalRows()
    const refused = await callTool(narrow, 'create_terminal', { sid: 's1', tid: 'narrow-1' })
    expect(errorOf(refused)).toMatchObject({ code: 'auth/forbidden' })
    const run = await callTool(narrow, 'run_command', { sid: 's1', command: 'touch should-not-exist' })
    expect(errorOf(run).code).toBe('auth/forbidden')
    expect(await terminalRows()).toEqual(before)
    // A token bound to other sessions sees the tools but not this session (the route's 404).
    const scoped = await client(await h.token(GRANTS, ['elsewhere']))
    expect(errorOf(await callTool(scoped, 'create_terminal', { sid: 's1', tid: 'scoped-1' }))).toMatchObject({ code: 'session/not-found' })
    expect(await terminalRows()).toEqual(before)
  })

  it('answers GET and DELETE /mcp with 405, and a POST without the Streamable HTTP Accept with 400', async () => {
    const auth = { authorization: `Bearer ${adminToken}` }
    for (const method of ['GET', 'DELETE']) {
      const response = await fetch(`${stack.api.url}/mcp`, { method, headers: auth })
      expect(response.status).toBe(405)
      expect((await response.json()).error.code).toBe('request/method-not-allowed')
    }
    const bare = await fetch(`${stack.api.url}/mcp`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: '{"jsonrpc":"2.0","id":1,"method":"tools/list"}',
    })
    expect(bare.status).toBe(400)
    expect((await bare.json()).error.code).toBe('request/invalid')
    // Junk the SDK's transport refuses comes back in termkeep's error shape, never as a 500.
    const streamable = { ...auth, accept: 'application/json, text/event-stream', 'content-type': 'application/json' }
    for (const body of [
      '{"jsonrpc":"2.0"}',
      '{"jsonrpc":"2.0","id":1}',
      '{"jsonrpc":"1.0","id":1,"method":"x"}',
      '[]',
      'nul',
      '{"jsonrpc":"2.0","id":{"a":1},"method":"tools/list"}',
    ]) {
      const response = await fetch(`${stack.api.url}/mcp`, { method: 'POST', headers: streamable, body })
      expect(response.status, body).toBe(400)
      expect((await response.json()).error.code, body).toBe('request/invalid')
    }
    const unauthenticated = await fetch(`${stack.api.url}/mcp`, {
      method: 'POST',
      headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json' },
      body: '{}',
    })
    expect(unauthenticated.status).toBe(401)
  })

  it('tells the SDK client a wrong token from one it never sent (RFC 6750 challenge), not a login to start', async () => {
    const wrong = mcpClient(stack.api.url, 'tk_wrong-token-for-this-test')
    await expect(wrong).rejects.toMatchObject({ code: 401, message: expect.stringContaining('auth/invalid-token') })
    const initialize = JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } },
    })
    const post = (headers: Record<string, string>) =>
      fetch(`${stack.api.url}/mcp`, {
        method: 'POST',
        headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...headers },
        body: initialize,
      })
    // Parsed as the SDK's own transport parses a 401: no resource metadata to start OAuth from.
    const refused = await post({ authorization: 'Bearer tk_wrong-token-for-this-test' })
    expect(refused.status).toBe(401)
    expect(extractWWWAuthenticateParams(refused)).toEqual({ resourceMetadataUrl: undefined, scope: undefined, error: 'invalid_token' })
    const none = await post({})
    expect(none.headers.get('www-authenticate')).toBe('Bearer realm="termkeep"')
    expect(extractWWWAuthenticateParams(none)).toEqual({})
  })
})

describe('transport rules beside the conformance suite', () => {
  const STREAMABLE = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }
  const post = (body: unknown, headers: Record<string, string> = {}) =>
    fetch(`${stack.api.url}/mcp`, {
      method: 'POST',
      headers: { ...STREAMABLE, authorization: `Bearer ${adminToken}`, ...headers },
      body: JSON.stringify(body),
    })
  /** The JSON-RPC messages of an SSE answer. */
  const messages = async (response: Response) =>
    (await response.text())
      .split('\n')
      .filter((line) => line.startsWith('data: '))
      .map((line) => JSON.parse(line.slice(6)))
  const list = { jsonrpc: '2.0', id: 1, method: 'tools/list' }

  /** A request with exactly these headers (fetch will not send a Host of one's choosing). */
  const raw = (method: string, path: string, headers: Record<string, string>, body?: string) =>
    new Promise<{ status: number; body: any }>((resolve, reject) => {
      const url = new URL(path, stack.api.url)
      const request = httpRequest({ host: url.hostname, port: url.port, path: url.pathname, method, headers }, (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => (text += chunk))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text.startsWith('{') ? JSON.parse(text) : text }))
      })
      request.on('error', reject)
      request.end(body)
    })

  it('refuses a present, invalid Origin and a spoofed Host with 403, on /mcp and on /v1 routes; no Origin passes', async () => {
    const auth = { authorization: `Bearer ${adminToken}` }
    for (const [headers, code] of [
      [{ origin: 'http://evil.example.com' }, 'request/origin-not-allowed'],
      [{ origin: 'null' }, 'request/origin-not-allowed'],
      [{ host: 'evil.example.com' }, 'request/host-not-allowed'],
      [{ host: 'evil.example.com:8787', origin: 'http://evil.example.com:8787' }, 'request/host-not-allowed'],
    ] as [Record<string, string>, string][]) {
      const refused = await raw('POST', '/mcp', { ...STREAMABLE, ...auth, ...headers }, JSON.stringify(list))
      expect([refused.status, refused.body.error?.code], JSON.stringify(headers)).toEqual([403, code])
      const route = await raw('GET', '/v1/workspaces', { ...auth, ...headers })
      expect([route.status, route.body.error?.code], JSON.stringify(headers)).toEqual([403, code])
    }
    // The page's own origin, another loopback one, and none at all.
    for (const headers of [{ origin: stack.api.url }, { origin: 'http://localhost:5173' }, {}] as Record<string, string>[]) {
      const answered = await post(list, headers)
      expect(answered.status, JSON.stringify(headers)).toBe(200)
      expect((await messages(answered))[0].result.tools.length).toBeGreaterThan(10)
    }
  })

  it('takes a JSON-RPC batch from a 2025-03-26 client, and refuses one under 2025-06-18 and later', async () => {
    const batch = [list, { jsonrpc: '2.0', id: 2, method: 'ping' }, { jsonrpc: '2.0', method: 'notifications/initialized' }]
    for (const headers of [{}, { 'mcp-protocol-version': '2025-03-26' }] as Record<string, string>[]) {
      const answered = await post(batch, headers)
      expect(answered.status, JSON.stringify(headers)).toBe(200)
      const answers = await messages(answered)
      expect(answers.map((m: { id: number }) => m.id).sort()).toEqual([1, 2])
      expect(answers.find((m: { id: number }) => m.id === 2).result).toEqual({})
    }
    for (const version of ['2025-06-18', '2025-11-25']) {
      const refused = await post(batch, { 'mcp-protocol-version': version })
      const body = await refused.json()
      expect([refused.status, body.error.code]).toEqual([400, 'request/invalid'])
      expect(body.error.message).toContain('batches')
    }
  })

  it('answers malformed params -32602 naming what is wrong, not -32603 with a schema dump', async () => {
    const cases: [unknown, RegExp][] = [
      [{ jsonrpc: '2.0', id: 7, method: 'tools/call', params: {} }, /^invalid params for tools\/call: params\.name: /],
      [{ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 5 } }, /^invalid params for tools\/call: params\.name: /],
      [{ jsonrpc: '2.0', id: 7, method: 'resources/read', params: {} }, /^invalid params for resources\/read: params\.uri: /],
      [{ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'no_such_tool' } }, /^unknown tool no_such_tool$/],
    ]
    for (const [request, message] of cases) {
      const [answer] = await messages(await post(request))
      expect(answer.error.code, JSON.stringify(request)).toBe(-32602)
      expect(answer.error.message, JSON.stringify(request)).toMatch(message)
      expect(answer.error.message.length).toBeLessThan(300)
    }
  })
})

describe('sessions', () => {
  it("lists the sessions in no workspace (workspace: none), and a workspace's own, through list_sessions", async () => {
    const loose = realpathSync((mkdirSync(join(h.dir, 'loose'), { recursive: true }), join(h.dir, 'loose')))
    await h.request('POST', '/v1/sessions', { token: adminToken, body: { id: 's-loose', cwd: loose } })
    const none = factsOf(await callTool(admin, 'list_sessions', { workspace: 'none' }))
    expect(none.sessions.map((s: { id: string }) => s.id)).toEqual(['s-loose'])
    const all = factsOf(await callTool(admin, 'list_sessions', { limit: 1 }))
    expect(all.sessions).toHaveLength(1)
    expect(all.next).not.toBeNull()
    const rest = factsOf(await callTool(admin, 'list_sessions', { cursor: all.next }))
    expect([...all.sessions, ...rest.sessions].map((s: { id: string }) => s.id).sort()).toEqual(['s-loose', 's1'])
    // A terminal of such a session is reached as any other.
    const run = factsOf(await callTool(admin, 'run_command', { sid: 's-loose', command: 'pwd' }))
    expect(run.exitCode).toBe(0)
    const bad = errorOf(await callTool(admin, 'list_sessions', { workspace: '../x' }))
    expect(bad.code).toBe('request/invalid')
  })
})

describe('terminals', () => {
  it('creates a terminal, types a command and Enter, waits for its output and reads the screen', async () => {
    const created = factsOf(await callTool(admin, 'create_terminal', { sid: 's1', tid: 'mcp-1' }))
    expect(created).toMatchObject({ id: 'mcp-1', state: 'running', cols: 80, rows: 24 })
    const sent = factsOf(await callTool(admin, 'send_keys', { sid: 's1', tid: 'mcp-1', text: 'echo hi-$((6*7))', keys: ['Enter'] }))
    expect(sent).toMatchObject({ sent: 'echo hi-$((6*7))\r'.length, tookControlFrom: null })
    const waited = factsOf(await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-1', pattern: 'hi-\\d+$', timeoutMs: 15_000 }))
    expect(waited).toMatchObject({ reason: 'matched', match: 'hi-42', line: 'hi-42' })
    const screen = await callTool(admin, 'read_screen', { sid: 's1', tid: 'mcp-1' })
    expect(textOf(screen)).toMatch(/echo hi-\$\(\(6\*7\)\)\nhi-42/)
    expect(factsOf(screen)).toMatchObject({ cols: 80, rows: 24, sequence: expect.any(Number) })
    const output = await callTool(admin, 'read_output', { sid: 's1', tid: 'mcp-1', after: 0 })
    expect(textOf(output)).toContain('hi-42')
    expect(textOf(output)).not.toMatch(/\x1b/)
    expect(factsOf(output)).toMatchObject({ next: expect.any(Number), end: null })
    // Control was released when the call ended: a follow with `if-free` is let in.
    const follow = await h.request('GET', '/v1/sessions/s1/terminals/mcp-1/follow?attachment=after&control=if-free', { token: adminToken })
    expect(follow.status).toBe(200)
    await follow.body?.cancel()
  })

  it('times out cleanly: reason timeout after timeoutMs, not an error', async () => {
    const started = Date.now()
    const result = await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-1', pattern: 'never-printed-\\d{9}', timeoutMs: 400 })
    expect(result.isError).toBeFalsy()
    expect(factsOf(result)).toMatchObject({ reason: 'timeout' })
    expect(Date.now() - started).toBeGreaterThanOrEqual(400)
  })

  it('waits for quiet output and for the exit, with the exit code', async () => {
    factsOf(await callTool(admin, 'create_terminal', { sid: 's1', tid: 'mcp-quiet' }))
    await callTool(admin, 'send_keys', {
      sid: 's1',
      tid: 'mcp-quiet',
      text: 'for i in 1 2 3; do echo tick-$i; sleep 0.2; done; exit 7',
      keys: ['Enter'],
    })
    const quiet = factsOf(await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-quiet', quietMs: 150, timeoutMs: 10_000 }))
    expect(['quiet', 'exited']).toContain(quiet.reason)
    const exited = factsOf(await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-quiet', timeoutMs: 15_000 }))
    expect(exited).toMatchObject({ reason: 'exited', state: 'exited', exitCode: 7 })
  })

  it('runs a command: its exit code and its output as plain text, the terminal kept', async () => {
    const result = await callTool(admin, 'run_command', {
      sid: 's1',
      tid: 'run-1',
      command: "printf '\\033[31mred\\033[0m line\\n'; echo err >&2; exit 3",
    })
    expect(textOf(result)).toBe('red line\nerr\n')
    expect(factsOf(result)).toMatchObject({ tid: 'run-1', state: 'exited', exitCode: 3, timedOut: false, omittedBytes: 0 })
    const screen = await callTool(admin, 'read_screen', { sid: 's1', tid: 'run-1' })
    expect(textOf(screen)).toBe('red line\nerr')
    const slow = factsOf(
      await callTool(admin, 'run_command', { sid: 's1', tid: 'run-2', command: 'echo started; sleep 30', timeoutMs: 500 }),
    )
    expect(slow).toMatchObject({ state: 'running', exitCode: null, timedOut: true })
    factsOf(await callTool(admin, 'close_terminal', { sid: 's1', tid: 'run-2' }))
  })

  it('does not take the keyboard from a person who controls the terminal, unless told to', async () => {
    const person = await h.request('GET', '/v1/sessions/s1/terminals/mcp-1/follow?attachment=person', { token: adminToken })
    expect(person.status).toBe(200)
    try {
      // Over HTTP too: a follow asking for control only if free is refused before its stream starts.
      const second = await h.request('GET', '/v1/sessions/s1/terminals/mcp-1/follow?attachment=other&control=if-free', {
        token: adminToken,
      })
      expect(second.status).toBe(409)
      expect((await second.json()).error).toMatchObject({
        code: 'terminal/control-unavailable',
        reason: 'controlled',
        controllerId: 'person',
      })
      const before = factsOf(await callTool(admin, 'read_output', { sid: 's1', tid: 'mcp-1', after: 0 })).next
      const refused = errorOf(
        await callTool(admin, 'send_keys', { sid: 's1', tid: 'mcp-1', text: 'echo typed-over-$((2+2))', keys: ['Enter'] }),
      )
      expect(refused).toMatchObject({ code: 'terminal/control-unavailable', reason: 'controlled', controllerId: 'person' })
      // Nothing was typed: the journal did not grow.
      expect(factsOf(await callTool(admin, 'read_output', { sid: 's1', tid: 'mcp-1', after: 0 })).next).toBe(before)
      const taken = factsOf(
        await callTool(admin, 'send_keys', { sid: 's1', tid: 'mcp-1', text: 'echo taken-$((2+2))', keys: ['Enter'], takeControl: true }),
      )
      expect(taken.tookControlFrom).toBe('person')
      expect(factsOf(await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-1', pattern: '^taken-4$', timeoutMs: 15_000 })).reason).toBe(
        'matched',
      )
      // The person's follow saw its control go (taken for the one write, then free again).
      const states = await readEvents(person, (events) =>
        events.some((e) => e.event === 'state' && JSON.parse(e.data).info.controllerId === null),
      )
      expect(states.filter((e) => e.event === 'state').map((e) => JSON.parse(e.data).info.controllerId)).toContain(null)
    } finally {
      await person.body?.cancel().catch(() => {})
    }
  })

  it('sends arrows as the terminal expects them: SS3 under application cursor mode', async () => {
    factsOf(await callTool(admin, 'create_terminal', { sid: 's1', tid: 'mcp-keys' }))
    await callTool(admin, 'send_keys', {
      sid: 's1',
      tid: 'mcp-keys',
      text: "printf '\\033[?1h'; echo ready-$((1+1)); cat -v",
      keys: ['Enter'],
    })
    expect(factsOf(await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-keys', pattern: '^ready-2$', timeoutMs: 15_000 })).reason).toBe(
      'matched',
    )
    await callTool(admin, 'send_keys', { sid: 's1', tid: 'mcp-keys', keys: ['Up', 'Enter'] })
    expect(
      factsOf(await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-keys', pattern: '^\\^\\[OA$', timeoutMs: 15_000 })).reason,
    ).toBe('matched')
    await callTool(admin, 'send_keys', { sid: 's1', tid: 'mcp-keys', keys: ['C-c'] })
  })
})

describe('files', () => {
  it('reads a file page, lists, stats, and pages Files.readText with next', async () => {
    const page = await callTool(admin, 'read_file', { sid: 's1', path: 'notes.txt', offset: 2, limit: 2 })
    expect(textOf(page)).toBe('two\nthree')
    expect(factsOf(page)).toMatchObject({ offset: 2, lines: 2, eof: false, absolutePath: join(dir, 'notes.txt') })
    const listing = factsOf(await callTool(admin, 'list_directory', { sid: 's1' }))
    expect(listing.entries.map((e: { name: string }) => e.name)).toContain('notes.txt')
    expect(factsOf(await callTool(admin, 'stat_file', { sid: 's1', path: 'notes.txt' }))).toMatchObject({ kind: 'file', bytes: 24 })
    const first = await callTool(admin, 'read_text', { sid: 's1', address: 'notes.txt', limit: 3 })
    expect(textOf(first)).toBe('one\ntwo\nthree')
    const rest = await callTool(admin, 'read_text', { sid: 's1', next: factsOf(first).next })
    expect(textOf(rest)).toBe('four\nfive')
    expect(factsOf(rest).eof).toBe(true)
  })
})

describe('bad arguments', () => {
  it("are validation errors with the route's own codes, never a crash", async () => {
    expect(errorOf(await callTool(admin, 'create_terminal', { sid: 's1', tid: 'bad', cols: 'wide' }))).toMatchObject({
      code: 'terminal/invalid-geometry',
    })
    expect(errorOf(await callTool(admin, 'create_terminal', { sid: 's1', colour: 'red' }))).toMatchObject({
      code: 'request/invalid',
      message: expect.stringContaining('unknown argument colour'),
    })
    expect(errorOf(await callTool(admin, 'read_screen', { sid: '..', tid: 'x' }))).toMatchObject({ code: 'request/invalid' })
    expect(errorOf(await callTool(admin, 'read_file', { sid: 's1', path: { not: 'a string' } }))).toMatchObject({ code: 'request/invalid' })
    expect(errorOf(await callTool(admin, 'read_file', { sid: 's1', path: 'missing.txt' }))).toMatchObject({ code: 'files/not-found' })
    expect(errorOf(await callTool(admin, 'send_keys', { sid: 's1', tid: 'mcp-1', keys: ['Entr'] }))).toMatchObject({
      code: 'request/invalid',
      message: expect.stringContaining('Entr'),
    })
    expect(errorOf(await callTool(admin, 'send_keys', { sid: 's1', tid: 'mcp-1' }))).toMatchObject({ code: 'request/invalid' })
    expect(errorOf(await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-1', pattern: '(?=look)ahead' }))).toMatchObject({
      code: 'request/invalid',
      message: expect.stringContaining('RE2'),
    })
    expect(errorOf(await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-1', pattern: 'x'.repeat(2000) }))).toMatchObject({
      code: 'request/invalid',
    })
    expect(errorOf(await callTool(admin, 'read_screen', { sid: 's1', tid: 'no-such-terminal' }))).toMatchObject({
      code: 'terminal/not-found',
    })
    await expect(admin.callTool({ name: 'no_such_tool', arguments: {} })).rejects.toThrow(/unknown tool/)
  })

  it('matches a catastrophic pattern in linear time', async () => {
    // `(a+)+$` against forty a's and a `!` backtracks 2^40 times in a JavaScript RegExp.
    await callTool(admin, 'send_keys', { sid: 's1', tid: 'mcp-1', text: "printf '%040d!\\n' 0 | tr 0 a", keys: ['Enter'] })
    expect(factsOf(await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-1', pattern: '^a{40}!$', timeoutMs: 15_000 })).reason).toBe(
      'matched',
    )
    const started = Date.now()
    const result = factsOf(await callTool(admin, 'wait_for', { sid: 's1', tid: 'mcp-1', pattern: '^(a+)+$', timeoutMs: 300 }))
    expect(result.reason).toBe('timeout')
    expect(Date.now() - started).toBeLessThan(5_000)
  })
})

describe('resources', () => {
  it('offers each live terminal screen as a resource, without subscriptions (stateless)', async () => {
    expect(admin.getServerCapabilities()?.resources).toMatchObject({ subscribe: false })
    const { resourceTemplates } = await admin.listResourceTemplates()
    expect(resourceTemplates.map((t) => t.uriTemplate)).toEqual(['termkeep://sessions/{sid}/terminals/{tid}/screen'])
    const uri = 'termkeep://sessions/s1/terminals/mcp-1/screen'
    expect((await admin.listResources()).resources.map((r) => r.uri)).toContain(uri)
    const read = await admin.readResource({ uri })
    expect(read.contents[0]).toMatchObject({ uri, mimeType: 'text/plain', text: expect.stringContaining('hi-42') })
    await expect(admin.readResource({ uri: 'termkeep://sessions/s1/terminals/none/screen' })).rejects.toThrow(/terminal\/not-found/)
  })
})
