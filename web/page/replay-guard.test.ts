/**
 * The page's replay guard on a real xterm.js core (@xterm/headless shares the parser and the
 * automatic replies with the browser build): queries in replayed chunks get no answer, the same
 * queries written live do. (Colour queries, OSC 4/10/11/12 "?", are answered only by the browser
 * build's theme service, so they are not exercised here.)
 */
import { Terminal } from '@xterm/headless'
import type { Terminal as BrowserTerminal } from '@xterm/xterm'
import { describe, expect, it } from 'vitest'
import { ReplayGuard } from './replay-guard.ts'

function setup() {
  const term = new Terminal({ cols: 40, rows: 10, allowProposedApi: true })
  const guard = new ReplayGuard(term as unknown as BrowserTerminal)
  const replies: string[] = []
  term.onData((data) => replies.push(data))
  const write = (data: string, replay: boolean) => new Promise<void>((resolve) => guard.write(data, replay, resolve))
  return { term, guard, replies, write }
}

const QUERIES = ['\x1b[c', '\x1b[>c', '\x1b[5n', '\x1b[6n', '\x1b[?6n', '\x1b[?2004$p', '\x1b[4$p', '\x1bP$qm\x1b\\']

describe('ReplayGuard', () => {
  it.each(QUERIES.map((q) => [JSON.stringify(q), q]))('answers %s live but not when replayed', async (_name, query) => {
    const { replies, write } = setup()
    await write(`before${query}after`, true)
    expect(replies).toEqual([])
    await write(query, false)
    expect(replies.length).toBeGreaterThan(0)
  })

  it('tells chunks apart when replay and live writes are queued back to back', async () => {
    const { replies, write } = setup()
    await Promise.all([write('\x1b[c', true), write('\x1b[6n', false), write('\x1b[c', true)])
    expect(replies).toHaveLength(1)
    expect(replies[0]).toMatch(/^\x1b\[\d+;\d+R$/)
  })
})
