/**
 * The plain projection for agents: right-trimmed text of the active viewport plus at most
 * SCREEN_HISTORY_ROWS rows of history above it, and the cursor. Bounded by the geometry limits and
 * independent of display retention.
 */
import type { Terminal } from '@xterm/headless'
import { SCREEN_HISTORY_ROWS } from '../../schema/limits.ts'
import type { ScreenProjection } from '../../schema/wire/display.ts'
import { activeBuffer } from '../emulator/history-store.ts'
import type { DisplayTracker } from './tracker.ts'

export function plainProjection(
  terminal: Terminal,
  tracker: DisplayTracker | undefined,
  sequence: number,
  historyRows = SCREEN_HISTORY_ROWS,
): ScreenProjection {
  const buffer = activeBuffer(terminal)
  const top = buffer.baseY
  const first = Math.max(0, top - historyRows)
  const lines: string[] = []
  for (let y = first; y < top + terminal.rows; y++) lines.push(buffer.getLine(y)?.translateToString(true) ?? '')
  return {
    cols: terminal.cols,
    rows: terminal.rows,
    title: tracker?.title ?? '',
    alternateScreen: buffer.type === 'alternate',
    // As the display reports it: `cols` while a wrap is pending after the last column was written.
    cursor: { row: buffer.cursorY, col: buffer.cursorX, visible: tracker?.cursorVisible ?? true },
    lines,
    viewportStart: top - first,
    sequence,
  }
}
