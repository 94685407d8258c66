/**
 * The page's xterm.js terminals: one look (theme, font, scrollback) and Unicode 11 widths, as the
 * sidecar's emulator measures them; and the geometry a window fits, kept inside the contract's
 * limits (a window too large for them still gets a valid terminal, never a refused resize).
 */
import { Terminal, type ITheme } from '@xterm/xterm'
import { MAX_COLS, MAX_ROWS, MAX_VISIBLE_CELLS, MIN_COLS, MIN_ROWS } from '../../schema/limits.ts'
import { useUnicode11 } from '../../common/xterm/widths.ts'
import { BASE_FONT_SIZE } from './sizing.ts'

export const THEME: ITheme = {
  background: '#101317',
  foreground: '#e6e6e6',
  cursor: '#f5d76e',
  selectionBackground: '#3a4a66',
}

export function newTerminal(readOnly: boolean): Terminal {
  const term = new Terminal({
    theme: THEME,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace',
    fontSize: BASE_FONT_SIZE,
    cursorBlink: !readOnly,
    disableStdin: readOnly,
    scrollback: 10_000,
    // The unicode API (Unicode 11 widths, as the sidecar's emulator measures) and the search
    // addon's match decorations are proposed APIs.
    allowProposedApi: true,
    screenReaderMode: false,
  })
  useUnicode11(term)
  return term
}

/** Pure: `cols`×`rows` brought inside the contract's geometry limits. */
export function fitGeometry(cols: number, rows: number): { cols: number; rows: number } {
  cols = Math.min(Math.max(cols, MIN_COLS), MAX_COLS)
  rows = Math.min(Math.max(rows, MIN_ROWS), MAX_ROWS)
  if (cols * rows > MAX_VISIBLE_CELLS) rows = Math.max(MIN_ROWS, Math.floor(MAX_VISIBLE_CELLS / cols))
  return { cols, rows }
}
