/**
 * The follow generator's ordering when the terminal changes while its first frame waits to be
 * taken. Over HTTP this interleaving depends on when the SSE writer pulls the next event (seen
 * under load as an MCP run_command that never learned of its command's exit), so it is driven
 * here step by step, on a stand-in terminal with the real Notifier: only the generator's own
 * bookkeeping is under test. The HTTP behaviour is covered by lifecycle.test.ts and the MCP tests.
 */
import { describe, expect, it } from 'vitest'
import { Notifier } from '../journal/notifier.ts'
import { follow } from './streams.ts'
import type { LiveTerminal } from './terminal.ts'

function standIn() {
  const changes = new Notifier()
  const journal = {
    lastSequence: 1,
    ended: false,
    retired: false,
    attach: () => () => undefined,
    geometryAt: () => ({ cols: 80, rows: 24 }),
    readItems: async (after: number) => (after < 1 ? [{ kind: 'data', sequence: 1, data: 'aGk=' }] : []),
    waitOr: (_after: number, others: Notifier[], ms: number, signal: AbortSignal) => Notifier.any(others, ms, signal),
  }
  const terminal = {
    state: 'running',
    version: 1,
    journal,
    changes,
    attach: () => 'token',
    detach: () => undefined,
    emulator: { hold: () => () => undefined, snapshot: async () => ({ sequence: 0, cols: 80, rows: 24, screen: {} }) },
    info: () => ({ state: terminal.state }),
  }
  const exit = () => {
    terminal.state = 'exited'
    terminal.version++
    journal.ended = true
    changes.notify()
  }
  return { terminal: terminal as unknown as LiveTerminal, exit }
}

describe('follow', () => {
  for (const [name, resumeAfter] of [
    ['a resumed follow', 0],
    ['a follow from a snapshot', undefined],
  ] as const) {
    it(`${name} still sends an exit that came while its first frame was being taken`, async () => {
      const { terminal, exit } = standIn()
      const abort = new AbortController()
      const stream = follow(terminal, 'a', undefined, resumeAfter, abort.signal)
      const first = await stream.next()
      expect((first.value as { data: { info: { state: string } } }).data.info.state).toBe('running')
      exit() // before the consumer asks for the next event
      const events = []
      for (let i = 0; i < 2; i++) events.push((await stream.next()).value as { event: string; data: { info?: { state: string } } })
      abort.abort()
      await stream.return(undefined)
      expect(events.map((e) => e.event)).toEqual(['output', 'state'])
      expect(events[1].data.info?.state).toBe('exited')
    })
  }
})
