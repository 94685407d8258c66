/**
 * The command tools over MCP (the SDK's own client, real HTTP): run_in_terminal in a shell made a
 * moment before keeps its state between calls, and list_commands / command_output read the
 * records it left.
 */
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, expect, test } from 'vitest'
import { COMMAND_TEXT_MAX_BYTES } from '../../schema/limits.ts'
import { callTool, mcpClient, textOf } from '../support/mcp.ts'
import { Commands } from './support.ts'

let c: Commands
let client: Client
beforeAll(async () => {
  c = await Commands.start('mcp')
  client = await mcpClient(c.stack.api.url, c.stack.token)
}, 60_000)
afterAll(async () => {
  await client?.close().catch(() => {})
  await c?.stop()
})

test('run_in_terminal carries state over between calls; list_commands and command_output read the records', async () => {
  const target = { sid: c.sid, tid: 'agent' }
  const created = await callTool(client, 'create_terminal', { ...target, shell: '/usr/bin/bash' })
  expect(created.isError).toBeFalsy()
  // Called at once: the run waits for the new shell's first prompt. The second line is longer than
  // the terminal is wide: readline draws the prompt again as the pasted line wraps.
  const first = await callTool(client, 'run_in_terminal', { ...target, command: 'cd /tmp && export GREETING=hi' })
  expect(first.isError).toBeFalsy()
  expect(JSON.parse(textOf(first, 1))).toMatchObject({ n: 1, exitCode: 0, ended: true, cwd: '/tmp' })
  const second = await callTool(client, 'run_in_terminal', {
    ...target,
    command: 'echo "$GREETING from $(pwd)"; exit_code_is() { return 4; }; exit_code_is',
  })
  expect(textOf(second)).toBe('hi from /tmp')
  expect(JSON.parse(textOf(second, 1))).toMatchObject({ n: 2, exitCode: 4 })
  const list = JSON.parse(textOf(await callTool(client, 'list_commands', target)))
  expect(list.commands.map((r: { n: number; exitCode: number }) => [r.n, r.exitCode])).toEqual([
    [1, 0],
    [2, 4],
  ])
  const output = await callTool(client, 'command_output', { ...target, n: 2 })
  expect(textOf(output)).toBe('hi from /tmp')
  const refused = await callTool(client, 'run_in_terminal', { ...target, command: 'echo\u0000' })
  expect(refused.isError).toBe(true)
  expect(JSON.parse(textOf(refused)).error.code).toBe('command/invalid')
})

test('a long output is cut from the front: the text of its last COMMAND_TEXT_MAX_BYTES output bytes, the cut counted', async () => {
  const target = { sid: c.sid, tid: 'long' }
  await callTool(client, 'create_terminal', { ...target, shell: '/usr/bin/bash' })
  // 1 … 30000, one per line: 168,894 bytes of text, 198,894 with the terminal's carriage returns.
  const run = await callTool(client, 'run_in_terminal', { ...target, command: 'seq 1 30000' })
  const facts = JSON.parse(textOf(run, 1))
  const text = textOf(run)
  expect(facts).toMatchObject({ exitCode: 0, ended: true })
  expect(text.endsWith('\n29999\n30000')).toBe(true)
  expect(text.split('\n')[0]).not.toBe('1')
  // The record keeps the same cut text, and counts what it left out.
  const kept = await c.call('GET', `${c.terminal('long')}/commands/${facts.n}/output`)
  expect(kept.body).toMatchObject({ text, omittedBytes: facts.omittedBytes })
  expect(kept.body.outputBytes).toBeGreaterThanOrEqual(198_894)
  const shown = kept.body.outputBytes - kept.body.omittedBytes
  expect(shown).toBeLessThanOrEqual(COMMAND_TEXT_MAX_BYTES)
  expect(shown).toBeGreaterThan(COMMAND_TEXT_MAX_BYTES / 2)
  // What it shows is exactly those bytes' lines: 7 bytes a line ("NNNNN\r\n"), the first maybe cut.
  expect(text.split('\n').length).toBe(Math.ceil(shown / 7))
})
