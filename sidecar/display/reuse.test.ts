/**
 * A revision that reuses the screen's last history packing (revision.ts, `reuse`), or counts the
 * history from the screen's row facts (row-facts.ts), is the revision a fresh walk of the whole
 * history makes, through typing in the viewport, viewport styles that
 * the history uses first or not, new history rows, trims, the alternate screen, ED 3 and a budget
 * that truncates; and a keystroke on a quiet screen does reuse it.
 */
import { describe, expect, it } from 'vitest'
import { HistoryPosition } from './history.ts'
import { encodeRevision, type HistoryPacking } from './revision.ts'
import { RowFacts } from './row-facts.ts'
import { emulator } from '../../test/support/display/harness.ts'

const E = '\x1b'

function lines(from: number, n: number): string {
  let s = ''
  for (let i = from; i < from + n; i++) s += `${E}[1;3${i % 7}mrow ${i}${E}[0m ${E}[48;5;${i % 200}m ${E}[0m tail ${i}\r\n`
  return s
}

/** `unwritten`: the revision's write failed, the database still lacks its new rows. */
type Step = { write: string; reused?: boolean; budget?: number; unwritten?: true }

const STEPS: Step[] = [
  { write: lines(0, 300) },
  { write: '$ ', reused: true },
  { write: 'ls -l', reused: true },
  // A viewport style that history uses first: the head's table changes, so no reuse.
  { write: `${E}[1;31mred${E}[0m` },
  { write: ' more', reused: true },
  { write: `\r${E}[2K$ ` },
  { write: 'x', reused: true },
  { write: lines(300, 40) },
  { write: 'y', reused: true },
  { write: `${E}[?1049h${E}[H${E}[2J${E}[7m editor ${E}[0m` },
  { write: `${E}[?1049l`, reused: true },
  { write: lines(340, 700) },
  { write: 'z', reused: true },
  { write: lines(1040, 5), unwritten: true },
  { write: 'q', reused: false },
  { write: 'p', reused: true },
  { write: 'w', reused: false, budget: 20_000 },
  { write: 'v', reused: false, budget: 20_000 },
  { write: `${E}[3J` },
  { write: 'u', reused: true },
  // More than 256 styles in one epoch: the facts' run styles take two bytes from then on.
  { write: Array.from({ length: 400 }, (_, i) => `${E}[38;2;${i % 256};${i >> 8};7mrgb ${i}${E}[0m\r\n`).join('') },
  { write: 't', reused: true },
  { write: lines(2000, 3) },
  { write: 's', reused: true },
]

describe('history packing reuse', () => {
  it('makes the revision a fresh walk makes, and a keystroke on a quiet screen reuses the walk', async () => {
    const e = emulator(70, 24, 600)
    const position = new HistoryPosition(e.terminal)
    const reuse: { last?: HistoryPacking } = {}
    const facts = new RowFacts()
    let stored: { token: string; from: number } | undefined
    for (const [i, step] of STEPS.entries()) {
      await e.write(step.write)
      const before = reuse.last
      const budget = step.budget
      const reused = encodeRevision(e.tracker, position, { sequence: i, stored, reuse, budget, facts })
      const fresh = encodeRevision(e.tracker, position, { sequence: i, stored, budget })
      const counted = encodeRevision(e.tracker, position, { sequence: i, stored, budget, facts })
      expect(reused, `step ${i}`).toEqual(fresh)
      expect(counted, `step ${i}`).toEqual(fresh)
      if (step.reused !== undefined) expect(before !== undefined && reuse.last === before, `step ${i} reused`).toBe(step.reused)
      // As the writer would: the database now holds every row the revision showed.
      if (!step.unwritten) stored = { token: fresh.history.token, from: fresh.history.end }
    }
  })
})
