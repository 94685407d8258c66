/**
 * The SSE watch of command starts and ends (GET …/commands/watch) through the real API and
 * sidecar: `begin`, then `start` (id 2n−1) and `end` (id 2n) per command, live as commands run;
 * resumed exactly by Last-Event-ID or `after`; `closed` when the terminal's output ended; 410 once
 * the terminal is retired; bad cursors are a typed 400.
 */
import { afterAll, beforeAll, expect, test } from 'vitest'
import { readSse, type SseEvent } from '../smoke/sse.ts'
import { Commands } from './support.ts'

let c: Commands
const TID = 'watched'
beforeAll(async () => {
  c = await Commands.start('watch')
  await c.open(TID, '/usr/bin/bash')
}, 60_000)
afterAll(async () => {
  await c?.stop()
})

function watch(query = '', headers: Record<string, string> = {}, signal?: AbortSignal): Promise<Response> {
  return fetch(`${c.stack.api.url}${c.terminal(TID)}/commands/watch${query}`, {
    headers: { authorization: `Bearer ${c.stack.token}`, ...headers },
    signal,
  })
}

const brief = (e: SseEvent) => {
  const data = JSON.parse(e.data)
  return [e.event, e.id ?? null, data.command ?? data.newest, data.state ?? null, data.exitCode ?? null]
}

test('starts and ends live, each with its record; resumed exactly by Last-Event-ID and after', async () => {
  const abort = new AbortController()
  const response = await watch('', {}, abort.signal)
  expect(response.status).toBe(200)
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
  const events = readSse(response)
  expect(brief(await events.next())).toEqual(['begin', null, 0, null, null])
  expect((await c.run(TID, 'echo one')).body.exitCode).toBe(0)
  expect((await c.run(TID, 'false')).body.exitCode).toBe(1)
  const live = [await events.next(), await events.next(), await events.next(), await events.next()]
  expect(live.map(brief)).toEqual([
    ['start', '1', 'echo one', 'running', null],
    ['end', '2', 'echo one', 'ended', 0],
    ['start', '3', 'false', 'running', null],
    ['end', '4', 'false', 'ended', 1],
  ])
  // The end carries the whole record: the cursors that cut its bytes from the journal.
  const ended = JSON.parse(live[1]!.data)
  expect(ended).toMatchObject({ n: 1, cwd: c.stack.workspaceDir })
  expect(ended.end).toBeGreaterThan(ended.start)
  abort.abort()

  const resumed = new AbortController()
  const again = readSse(await watch('', { 'last-event-id': '2' }, resumed.signal))
  expect(brief(await again.next())).toEqual(['begin', null, 2, null, null])
  expect([await again.next(), await again.next()].map((e) => e.id)).toEqual(['3', '4'])
  resumed.abort()
  const fromAfter = new AbortController()
  const third = readSse(await watch('?after=3', {}, fromAfter.signal))
  await third.next()
  expect(brief(await third.next())).toEqual(['end', '4', 'false', 'ended', 1])
  fromAfter.abort()
})

test('bad cursors are a typed 400; an unknown terminal 404', async () => {
  for (const [query, headers] of [
    ['?after=x', {}],
    ['?after=-1', {}],
    ['', { 'last-event-id': 'soon' }],
  ] as const) {
    const response = await watch(query, headers)
    expect([response.status, (await response.json()).error.code]).toEqual([400, 'request/invalid'])
  }
  const missing = await fetch(`${c.stack.api.url}/v1/sessions/${c.sid}/terminals/nosuch/commands/watch`, {
    headers: { authorization: `Bearer ${c.stack.token}` },
  })
  expect([missing.status, (await missing.json()).error.code]).toEqual([404, 'terminal/not-found'])
})

test('closed once the terminal ends; 410 after it is retired, while the list still answers', async () => {
  const events = readSse(await watch('?after=4'))
  expect(brief(await events.next())).toEqual(['begin', null, 2, null, null])
  expect((await c.call('DELETE', c.terminal(TID))).status).toBe(200)
  expect(brief(await events.next())).toEqual(['closed', null, 2, null, null])
  const after = await watch()
  expect([after.status, (await after.json()).error.code]).toEqual([410, 'terminal/unavailable'])
  const list = await c.call('GET', `${c.terminal(TID)}/commands`)
  expect(list.body.commands.map((r: { command: string }) => r.command)).toEqual(['echo one', 'false'])
})
