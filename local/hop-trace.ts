/**
 * Writes this isolate's hop marks (common/hop-trace.ts) to the TERMKEEP_HOP_TRACE file every
 * HOP_TRACE_FLUSH_MS, appending whole lines (one write each time: O_APPEND keeps the processes'
 * lines apart). Off the measured path: a keystroke's marks are written after it, not during.
 */
import { appendFile } from 'node:fs'
import { HOP_TRACE_TARGET, takeHopMarks } from '../common/hop-trace.ts'

/** Often enough that a bench run's marks are on disk a moment after its last keystroke. */
const HOP_TRACE_FLUSH_MS = 200

export function writeHopTrace(): void {
  const target = HOP_TRACE_TARGET
  if (target === undefined) return
  setInterval(() => {
    const lines = takeHopMarks()
    if (lines.length > 0) appendFile(target, `${lines.join('\n')}\n`, () => {})
  }, HOP_TRACE_FLUSH_MS).unref()
}
