/**
 * The observation tools end to end: the MCP SDK's Client over real HTTP against the real stack
 * (sidecar process, Node API, libSQL) with the fake agent (test/fixtures/fake-observed-agent.mjs)
 * in a real PTY. The seed's flow as tool calls — context, resolve the home, list `.jsonl`, the
 * last line as JSON, follow-read since a cursor and on from the returned one (nothing repeated,
 * nothing missed), `replace` across a rotation — and the follow route's own resume over HTTP
 * (`after=`, Last-Event-ID). Tools are listed and refused per grant; undeclared names, bad and
 * foreign handles and cursors are typed tool errors.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { Observation } from '../observation/support.ts'
import { callTool, errorOf, factsOf, mcpClient } from '../support/mcp.ts'
import { waitFor } from '../support/ports.ts'

const DATE = '2025-03-04'
let o: Observation
let home: string
let observer: Client
const clients: Client[] = []
const journal = () => join(home, '.fakeagent', 'sessions', DATE, 'abc.jsonl')
const T1 = { sid: 'obs-mcp-observe', tid: 't1' }

async function client(token: string): Promise<Client> {
  const made = await mcpClient(o.stack.api.url, token)
  clients.push(made)
  return made
}

async function facts(name: string, args: Record<string, unknown>): Promise<any> {
  return factsOf(await callTool(observer, name, { ...T1, ...args }))
}

/** Has the agent written `text` to its journal (the file as it is now)? */
async function written(text: string): Promise<void> {
  await waitFor(async () => readFileSync(journal(), 'utf8').includes(text), 10_000, `${text} in the journal`)
}

beforeAll(async () => {
  o = await Observation.start('mcp-observe')
  const token = await o.observer(['observe:process', 'observe:files', 'observe:journal'], ['FAKEAGENT_DATA'])
  await o.terminal('t1')
  await o.foreground('t1', token, 'bash')
  home = await o.startAgent('t1', token, 'abc', { args: `--date ${DATE}` })
  observer = await client(token)
}, 60_000)

afterAll(async () => {
  for (const c of clients) await c.close().catch(() => {})
  await o?.stop()
})

describe('tools/list and grants', () => {
  it('shows an observer the observation tools and nothing else; without observe:journal no follow, and a call is refused', async () => {
    const names = (await observer.listTools()).tools.map((t) => t.name)
    expect(names).toContain('observe_follow')
    expect(names.every((n) => n.startsWith('observe_'))).toBe(true)
    expect(names).toHaveLength(20)
    // One shape for a handle in every tool that takes one: `{id}`, as the tools hand them out.
    const takingHandle = (await observer.listTools()).tools.filter((t) => 'handle' in (t.inputSchema.properties ?? {}))
    expect(takingHandle.map((t) => t.name)).toContain('observe_follow')
    for (const tool of takingHandle) {
      expect((tool.inputSchema.properties as any).handle, tool.name).toMatchObject({
        type: 'object',
        properties: { id: { type: 'string' } },
      })
    }
    const filesOnly = await client(await o.observer(['observe:files', 'observe:process']))
    const visible = (await filesOnly.listTools()).tools.map((t) => t.name)
    expect(visible).not.toContain('observe_follow')
    expect(visible).toContain('observe_list_directory')
    const { handle } = factsOf(
      await callTool(filesOnly, 'observe_resolve_home_relative', { ...T1, relativePath: `.fakeagent/sessions/${DATE}/abc.jsonl` }),
    )
    const refused = errorOf(await callTool(filesOnly, 'observe_follow', { ...T1, handle }))
    expect(refused).toMatchObject({ code: 'auth/forbidden', required: 'observe:journal' })
  })
})

describe('the seed flow as tool calls', () => {
  let file: { id: string }
  let next: string

  it('answers the context with the foreground program', async () => {
    const context = await facts('observe_context', {})
    expect(context.foreground.executableName).toBe('node')
    expect(context.foreground.arguments).toEqual(expect.arrayContaining(['--id', 'abc']))
    expect(context.capabilities.sort()).toEqual(['agent-journal', 'filesystem-observation', 'process-observation'])
    const { processes } = await facts('observe_descendants', {})
    const agent = processes.find((p: any) => p.executableName === 'node')
    expect(agent).toMatchObject({ foreground: true, cwd: '~' })
    const open = await facts('observe_open_files', { processes: [agent.handle], access: 'writable' })
    expect(open.files.map((f: any) => f.path)).toEqual([`~/.fakeagent/sessions/${DATE}/abc.jsonl`])
  })

  it("resolves the home directory, lists .jsonl files, and reads the newest one's last line as JSON", async () => {
    await o.type('t1', 'say hello\r')
    await written('hello')
    const root = await facts('observe_resolve_home_directory', { relativePath: '.fakeagent/sessions' })
    const listing = await facts('observe_list_directory', {
      root: root.handle,
      extensions: ['.jsonl'],
      maxDepth: 2,
      maxEntries: 100,
      maxBytes: 5_000_000,
    })
    expect(listing.entries.map((e: any) => e.relativePath)).toEqual([`${DATE}/abc.jsonl`])
    file = listing.entries.at(-1).handle
    // The same file by its home-relative path: the same handle (one object, one id).
    expect((await facts('observe_resolve_home_relative', { relativePath: `.fakeagent/sessions/${DATE}/abc.jsonl` })).handle).toEqual(file)
    expect(await facts('observe_read_json_line', { handle: file, maxBytes: 65_536, position: 'last' })).toEqual({
      value: { n: 2, type: 'message', text: 'hello' },
    })
    expect(await facts('observe_read_json_line', { handle: file, maxBytes: 65_536, position: 'first' })).toEqual({
      value: { n: 1, type: 'session', text: 'abc' },
    })
    expect(await facts('observe_read', { handle: file, maxBytes: 65_536 })).toEqual({
      encoding: 'utf8',
      text: readFileSync(journal(), 'utf8'),
      size: readFileSync(journal()).length,
      truncated: false,
    })
    expect((await facts('observe_stat', { handle: file })).stat).toMatchObject({ kind: 'file', size: readFileSync(journal()).length })
  })

  it('follow-reads the file, then what was appended since the cursor, then nothing more', async () => {
    const first = await facts('observe_follow', { handle: file, quietMs: 300 })
    expect(first.reason).toBe('quiet')
    expect(first.chunks).toEqual([
      { type: 'append', offset: 0, length: readFileSync(journal()).length, encoding: 'utf8', text: readFileSync(journal(), 'utf8') },
    ])
    const before = readFileSync(journal())
    await o.type('t1', 'say one\r')
    await o.type('t1', 'say two\r')
    await written('two')
    const since = await facts('observe_follow', { handle: file, after: first.next, quietMs: 300 })
    const added = readFileSync(journal()).subarray(before.length).toString()
    expect(added).toBe('{"n":3,"type":"message","text":"one"}\n{"n":4,"type":"message","text":"two"}\n')
    expect(since.chunks).toEqual([{ type: 'append', offset: before.length, length: added.length, encoding: 'utf8', text: added }])
    const again = await facts('observe_follow', { handle: file, after: since.next, quietMs: 300 })
    expect(again).toMatchObject({ chunks: [], next: since.next, reason: 'quiet' })
    next = since.next
  })

  it('reads a burst page by page (small chunks, small pages) from each returned cursor: every byte once, in order', async () => {
    const start = readFileSync(journal()).length
    await o.type('t1', 'burst 400\r')
    await written('burst 399')
    let text = ''
    let calls = 0
    for (let cursor = next; !text.includes('"burst 399"}\n') && calls < 200; calls++) {
      const page = await facts('observe_follow', { handle: file, after: cursor, maxChunkBytes: 1_000, maxBytes: 3_000, quietMs: 500 })
      for (const chunk of page.chunks) {
        expect(chunk.type).toBe('append')
        expect(chunk.offset, 'each page goes on where the previous one ended').toBe(start + Buffer.byteLength(text))
        text += chunk.text
      }
      cursor = page.next
      next = page.next
    }
    expect(calls).toBeGreaterThan(5)
    const records = text
      .split('\n')
      .slice(0, -1)
      .map((line) => JSON.parse(line))
    expect(records.map((r) => r.text)).toEqual(Array.from({ length: 400 }, (_, i) => `burst ${i}`))
    expect(Buffer.from(text).equals(readFileSync(journal()).subarray(start))).toBe(true)
  })

  it('answers replace when the journal was rotated while the reader was away, and goes on in the new file', async () => {
    await o.type('t1', 'rotate\r')
    await waitFor(async () => readFileSync(journal(), 'utf8').includes('abc rotated'), 10_000, 'the rotation')
    const rotated = await facts('observe_follow', { handle: file, after: next, quietMs: 300 })
    expect(rotated.chunks).toEqual([
      { type: 'replace', offset: 0, length: readFileSync(journal()).length, encoding: 'utf8', text: readFileSync(journal(), 'utf8') },
    ])
    await o.type('t1', 'say in the new file\r')
    await written('in the new file')
    const on = await facts('observe_follow', { handle: file, after: rotated.next, quietMs: 300 })
    expect(on.chunks).toEqual([
      expect.objectContaining({ type: 'append', offset: rotated.chunks[0].length, text: expect.stringContaining('"in the new file"') }),
    ])
  })
})

describe('the follow route resumes over HTTP', () => {
  it('goes on after the event named by Last-Event-ID (which wins over after=), with no byte twice', async () => {
    const { handle } = await facts('observe_resolve_home_relative', { relativePath: `.fakeagent/sessions/${DATE}/abc.jsonl` })
    const url = `${o.terminalPath('t1', T1.sid)}/observation/files/follow?handle=${encodeURIComponent(handle.id)}`
    const token = (await o.call('POST', '/v1/tokens', { json: { name: 'http', grants: ['observe:journal'], sessions: [T1.sid] } })).body
      .secret
    const first = await o.stream(url, token)
    const start = await first.next()
    first.close()
    expect(start).toMatchObject({ event: 'append', data: { offset: 0 }, id: expect.stringMatching(/^c1\./) })
    const had = Buffer.from(start!.data.bytes, 'base64')
    await o.type('t1', 'say resumed\r')
    await written('resumed')
    const resumed = await o.stream(
      `${url}&after=${encodeURIComponent(`c1.0.${'A'.repeat(22)}.${'A'.repeat(22)}.${'A'.repeat(22)}`)}`,
      token,
      { 'last-event-id': start!.id! },
    )
    const next = await resumed.next()
    resumed.close()
    expect(next).toMatchObject({ event: 'append', data: { offset: had.length } })
    expect(Buffer.concat([had, Buffer.from(next!.data.bytes, 'base64')]).equals(readFileSync(journal()))).toBe(true)
    // The same cursor as after=, and refusals: malformed, or another handle's.
    const viaQuery = await o.stream(`${url}&after=${encodeURIComponent(start!.id!)}`, token)
    expect((await viaQuery.next())?.data.offset).toBe(had.length)
    viaQuery.close()
    const malformed = await o.call('GET', `${url}&after=c1.nope`, { token })
    expect([malformed.status, malformed.body.error.code]).toEqual([400, 'request/invalid'])
    const header = await fetch(`${o.stack.api.url}${url}`, { headers: { authorization: `Bearer ${token}`, 'last-event-id': '42' } })
    expect([header.status, (await header.json()).error.code]).toEqual([400, 'request/invalid'])
    const root = await facts('observe_resolve_home_directory', { relativePath: '.fakeagent' })
    const config = (
      await facts('observe_list_directory', { root: root.handle, extensions: ['.json'], maxDepth: 0, maxEntries: 1, maxBytes: 100_000 })
    ).entries[0].handle
    const foreign = await o.call(
      'GET',
      `${o.terminalPath('t1', T1.sid)}/observation/files/follow?handle=${encodeURIComponent(config.id)}&after=${encodeURIComponent(start!.id!)}`,
      { token },
    )
    expect([foreign.status, foreign.body.error.code]).toEqual([400, 'observe/cursor-invalid'])
  })
})

describe('refusals as typed tool errors', () => {
  it('answers an undeclared environment name with the typed 403', async () => {
    expect(errorOf(await callTool(observer, 'observe_environment', { ...T1, names: ['FAKEAGENT_DATA', 'HOME'] }))).toMatchObject({
      code: 'observe/undeclared',
      names: ['HOME'],
    })
    const rooted = await callTool(observer, 'observe_resolve_directory_relative_to_environment', {
      ...T1,
      relativePath: 'sessions',
      environmentVariable: 'PATH',
    })
    expect(errorOf(rooted)).toMatchObject({ code: 'observe/undeclared', names: ['PATH'] })
    expect((await facts('observe_environment', { names: ['FAKEAGENT_DATA'] })).environment).toEqual({
      FAKEAGENT_DATA: `${home}/.fakeagent`,
    })
  })

  it('answers bad, tampered and foreign handles and cursors with typed errors, never a crash', async () => {
    const { handle } = await facts('observe_resolve_home_relative', { relativePath: `.fakeagent/sessions/${DATE}/abc.jsonl` })
    await o.terminal('t2', T1.sid)
    const t2 = { ...T1, tid: 't2' }
    const tampered = { id: `${handle.id.slice(0, -2)}${handle.id.endsWith('AA') ? 'BB' : 'AA'}` }
    const cases: [string, Record<string, unknown>, string][] = [
      ['observe_read', { ...T1, handle: { id: 'h1.f.garbage' }, maxBytes: 10 }, 'observe/handle-invalid'],
      ['observe_read', { ...T1, handle: tampered, maxBytes: 10 }, 'observe/handle-invalid'],
      ['observe_read', { ...t2, handle, maxBytes: 10 }, 'observe/handle-invalid'],
      ['observe_read', { ...T1, handle: { id: 5 }, maxBytes: 10 }, 'request/invalid'],
      ['observe_read', { ...T1, handle, maxBytes: -1 }, 'request/invalid'],
      ['observe_list_directory', { ...T1, root: handle, maxDepth: 1, maxEntries: 1, maxBytes: 1 }, 'request/invalid'],
      ['observe_follow', { ...t2, handle, quietMs: 100 }, 'observe/handle-invalid'],
      ['observe_follow', { ...T1, handle: { id: 'h1.f.garbage' }, quietMs: 100 }, 'observe/handle-invalid'],
      ['observe_follow', { ...T1, handle: tampered, quietMs: 100 }, 'observe/handle-invalid'],
      // The id alone is not a handle: one shape, `{id}`, in every tool.
      ['observe_follow', { ...T1, handle: handle.id, quietMs: 100 }, 'request/invalid'],
      ['observe_follow', { ...T1, handle, after: 'not-a-cursor', quietMs: 100 }, 'request/invalid'],
      [
        'observe_follow',
        { ...T1, handle, after: `c1.3.${'x'.repeat(22)}.${'y'.repeat(22)}.${'z'.repeat(22)}`, quietMs: 100 },
        'observe/cursor-invalid',
      ],
      ['observe_context', { ...T1, tid: '..' }, 'request/invalid'],
      ['observe_context', { ...T1, tid: 'nope' }, 'terminal/not-found'],
    ]
    for (const [name, args, code] of cases) {
      expect(errorOf(await callTool(observer, name, args)).code, `${name} ${JSON.stringify(args)}`).toBe(code)
    }
  })
})
