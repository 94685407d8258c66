/**
 * The tmux MCP servers' remaining tools and names over MCP (the SDK's own client, real HTTP, a
 * real sidecar): names wherever ids are taken, find, rename, RE2 search of one terminal's or a
 * session's output as cursors and lines, any range of the persisted scrollback, closing a session.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { waitFor } from '../support/ports.ts'
import { callTool, mcpClient, textOf } from '../support/mcp.ts'
import { Commands } from './support.ts'

let c: Commands
let client: Client
const facts = (result: Awaited<ReturnType<typeof callTool>>, index = 0) => JSON.parse(textOf(result, index))
beforeAll(async () => {
  c = await Commands.start('tools')
  client = await mcpClient(c.stack.api.url, c.stack.token)
}, 60_000)
afterAll(async () => {
  await client?.close().catch(() => {})
  await c?.stop()
})

test('names wherever an id is taken; find and rename', async () => {
  const session = facts(await callTool(client, 'create_session', { cwd: c.stack.workspaceDir, name: 'web' })).session
  expect(session.name).toBe('web')
  const created = await callTool(client, 'create_terminal', { sid: 'web', tid: 'main', name: 'srv', shell: '/usr/bin/bash' })
  expect(facts(created)).toMatchObject({ sessionId: session.id, id: 'main', name: 'srv' })
  const run = await callTool(client, 'run_in_terminal', { sid: 'web', tid: 'srv', command: 'echo by-name' })
  expect(textOf(run)).toBe('by-name')
  const found = facts(await callTool(client, 'find', { q: 'SR' }))
  expect(found.terminals.map((t: { id: string }) => t.id)).toEqual(['main'])
  const renamed = facts(await callTool(client, 'rename_terminal', { sid: 'web', tid: 'srv', name: 'server', title: 'Server' }))
  expect(renamed).toMatchObject({ id: 'main', name: 'server', title: 'Server' })
  expect(facts(await callTool(client, 'rename_session', { sid: 'web', name: 'website' })).session.name).toBe('website')
  expect(textOf(await callTool(client, 'run_in_terminal', { sid: 'website', tid: 'server', command: 'echo renamed' }))).toBe('renamed')
  // A name that is another's id is refused; an id made later that is a name makes it ambiguous.
  const clash = await callTool(client, 'create_terminal', { sid: 'website', tid: 'other', name: 'main', shell: '/bin/sh' })
  expect(facts(clash).error.code).toBe('name/conflict')
  await callTool(client, 'create_session', { cwd: c.stack.workspaceDir, id: 'website' })
  const ambiguous = await callTool(client, 'list_terminals', { sid: 'website' })
  expect(ambiguous.isError).toBe(true)
  expect(facts(ambiguous).error.code).toBe('name/ambiguous')
})

test('search one terminal and a session: matching lines as cursors', async () => {
  const sid = facts(await callTool(client, 'create_session', { cwd: c.stack.workspaceDir, name: 'searched' })).session.id
  await callTool(client, 'create_terminal', { sid, tid: 'a', shell: '/usr/bin/bash' })
  await callTool(client, 'create_terminal', { sid, tid: 'b', shell: '/usr/bin/bash' })
  await callTool(client, 'run_in_terminal', { sid, tid: 'a', command: "printf 'alpha\\nbeta 42\\n\\033[31mgamma 7\\033[0m\\n'" })
  await callTool(client, 'run_in_terminal', { sid, tid: 'b', command: "printf 'beta 9\\n'" })
  const one = facts(await callTool(client, 'search_output', { sid, tid: 'a', pattern: '^(beta|gamma) \\d+$' }))
  expect(one.complete).toBe(true)
  expect(one.matches.map((m: { line: string }) => m.line)).toEqual(['beta 42', 'gamma 7'])
  const page = await callTool(client, 'read_output', { sid, tid: 'a', after: one.matches[0].sequence - 1 })
  expect(textOf(page)).toContain('beta 42')
  const later = facts(await callTool(client, 'search_output', { sid, tid: 'a', pattern: 'beta', after: one.next }))
  expect(later.matches).toEqual([])
  const all = facts(await callTool(client, 'search_session', { sid, pattern: '^beta \\d+$' }))
  expect(
    all.terminals.map((t: { terminalId: string; matches: { line: string }[] }) => [t.terminalId, t.matches.map((m) => m.line)]),
  ).toEqual([
    ['a', ['beta 42']],
    ['b', ['beta 9']],
  ])
  const bad = await callTool(client, 'search_output', { sid, tid: 'a', pattern: '(?<=x)y' })
  expect(facts(bad).error.code).toBe('request/invalid')
})

test('read any range of the persisted scrollback; close a whole session', async () => {
  const sid = facts(await callTool(client, 'create_session', { cwd: c.stack.workspaceDir, name: 'history' })).session.id
  await callTool(client, 'create_terminal', { sid, tid: 'long', shell: '/usr/bin/bash', cols: 80, rows: 24 })
  await callTool(client, 'run_in_terminal', { sid, tid: 'long', command: 'seq 1 500' })
  // The settled screen holding the last line of output.
  const scrollback = await waitFor(
    async () => {
      const result = await callTool(client, 'read_scrollback', { sid, tid: 'long', count: 2000 })
      return !result.isError && textOf(result).includes('\n500\n') && result
    },
    15_000,
    'a settled screen with the whole output',
  )
  const meta = facts(scrollback, 1)
  expect(meta.historyRows).toBeGreaterThan(400)
  expect(textOf(scrollback).split('\n')).toEqual(expect.arrayContaining(Array.from({ length: 500 }, (_, i) => String(i + 1))))
  const first = await callTool(client, 'read_scrollback', { sid, tid: 'long', from: 0, count: 3 })
  expect(facts(first, 1)).toMatchObject({ from: 0 })
  const row250 = textOf(scrollback).split('\n').indexOf('250')
  const one = await callTool(client, 'read_scrollback', { sid, tid: 'long', from: row250, count: 1 })
  expect(textOf(one)).toBe('250')

  await callTool(client, 'create_terminal', { sid, tid: 'second', shell: '/bin/sh' })
  const closed = facts(await callTool(client, 'close_session', { sid }))
  expect(closed.closed.map((t: { id: string; state: string }) => [t.id, t.state]).sort()).toEqual([
    ['long', 'retired'],
    ['second', 'retired'],
  ])
  // Its records and screen outlive it.
  expect(textOf(await callTool(client, 'command_output', { sid, tid: 'long', n: 1 }))).toContain('500')
  expect(textOf(await callTool(client, 'read_scrollback', { sid, tid: 'long', from: row250, count: 1 }))).toBe('250')
})
