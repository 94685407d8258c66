/**
 * The history allowance: HISTORY_CELLS worth of rows at the current width (10,000 at 80 columns).
 * On resize it is recomputed for the new width BEFORE the emulator reflows, so narrowing a
 * terminal re-wraps its history into the larger row allowance instead of trimming it first.
 */
import type { Terminal } from '@xterm/headless'
import { HISTORY_CELLS } from '../../schema/limits.ts'

export function historyRowsFor(cols: number, historyCells = HISTORY_CELLS): number {
  return Math.floor(historyCells / cols)
}

/** Resizes the emulator with the allowance for the new width applied first. */
export function resizeWithAllowance(terminal: Terminal, cols: number, rows: number, historyCells = HISTORY_CELLS): void {
  const scrollback = historyRowsFor(cols, historyCells)
  if (terminal.options.scrollback !== scrollback) terminal.options.scrollback = scrollback
  if (terminal.cols !== cols || terminal.rows !== rows) terminal.resize(cols, rows)
}
