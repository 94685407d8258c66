/**
 * The explicit suffix of a follow snapshot: the terminal state @xterm/addon-serialize leaves out,
 * which a client needs to land exactly where the program is.
 *
 * - The cursor: serialize can restore it one column off after a full-row write and never
 *   restores its visibility (xterm.js #6165, #3364), so the suffix ends with CUP to the exact
 *   position and DECTCEM. xterm keeps "wrap pending" (the cursor after writing the last column)
 *   as cursorX === cols, which no CUP can express; the suffix recreates it the way it arose, by
 *   rewriting the last cell of the row with its own attributes.
 * - The scroll region (DECSTBM), the saved cursor (DECSC), the DEC line-drawing character set
 *   (G0/G1, SO) and the current drawing attributes (SGR): without them a full-screen program's
 *   next output scrolls the wrong rows, restores to the wrong place, draws letters instead of
 *   lines, or in the wrong colours.
 */
import type { IBufferCell, Terminal } from '@xterm/headless'

/** The parts of xterm's core the suffix reads (no public API has them). */
interface Core {
  /** `savedY` counts from the top of the history (ybase + row), as xterm stores it. */
  buffer: {
    ybase: number
    scrollTop: number
    scrollBottom: number
    savedX: number
    savedY: number
    savedCurAttrData: IBufferCell & { fg: number; bg: number }
  }
  _inputHandler: { _curAttrData: IBufferCell }
  _charsetService: { glevel: number; _charsets: (Record<string, string> | undefined)[] }
}

function core(terminal: Terminal): Core {
  const c = (terminal as unknown as { _core?: Partial<Core> })._core
  if (!c?.buffer || !c._inputHandler?._curAttrData || !Array.isArray(c._charsetService?._charsets)) {
    throw new Error('@xterm/headless internals changed: buffer, _inputHandler or _charsetService')
  }
  return c as Core
}

/** DEC special graphics maps "q" to a horizontal line. */
const lineDrawing = (charset: Record<string, string> | undefined) => charset?.q === '\u2500'

export function cursorRestoreSuffix(terminal: Terminal): string {
  const { buffer: state, _inputHandler: input, _charsetService: charsets } = core(terminal)
  // Under origin mode (DECOM, which serialize restores) CUP counts rows from the scroll region's top.
  const row = (y: number) => (terminal.modes.originMode ? y - state.scrollTop : y) + 1
  let suffix = ''
  // DECSTBM homes the cursor: it comes before anything that positions it.
  if (state.scrollTop !== 0 || state.scrollBottom !== terminal.rows - 1) suffix += `\x1b[${state.scrollTop + 1};${state.scrollBottom + 1}r`
  const saved = state.savedCurAttrData
  const savedRow = Math.max(0, state.savedY - state.ybase)
  if (state.savedX !== 0 || savedRow !== 0 || saved.fg !== 0 || saved.bg !== 0) {
    suffix += `\x1b[${row(savedRow)};${state.savedX + 1}H${sgr(saved)}\x1b7`
  }
  const buffer = terminal.buffer.active
  const x = buffer.cursorX
  const y = buffer.cursorY
  if (x < terminal.cols) {
    suffix += `\x1b[${row(y)};${x + 1}H`
  } else {
    const line = buffer.getLine(buffer.baseY + y)
    let column = terminal.cols - 1
    let cell = line?.getCell(column)
    if (cell && cell.getWidth() === 0 && column > 0) cell = line?.getCell(--column) // a wide char's tail
    const chars = cell?.getChars() || ' '
    suffix += `\x1b[${row(y)};${column + 1}H${cell ? sgr(cell) : ''}${chars}`
  }
  // After the last cell was rewritten in the character set it was drawn with.
  if (lineDrawing(charsets._charsets[0])) suffix += '\x1b(0'
  if (lineDrawing(charsets._charsets[1])) suffix += '\x1b)0'
  if (charsets.glevel === 1) suffix += '\x0e'
  // The attributes the program draws with now (the last cell written may differ).
  suffix += sgr(input._curAttrData)
  return suffix + (cursorHidden(terminal) ? '\x1b[?25l' : '\x1b[?25h')
}

/** DECTCEM state. xterm.js has no public accessor; the core service holds it. */
export function cursorHidden(terminal: Terminal): boolean {
  const core = (terminal as unknown as { _core?: { coreService?: { isCursorHidden?: boolean } } })._core
  const hidden = core?.coreService?.isCursorHidden
  if (typeof hidden !== 'boolean') throw new Error('@xterm/headless internals changed: coreService.isCursorHidden')
  return hidden
}

/** The SGR sequence that reproduces one cell's attributes from a reset state. */
export function sgr(cell: IBufferCell): string {
  const p: (number | string)[] = [0]
  if (cell.isBold()) p.push(1)
  if (cell.isDim()) p.push(2)
  if (cell.isItalic()) p.push(3)
  if (cell.isUnderline()) p.push(4)
  if (cell.isBlink()) p.push(5)
  if (cell.isInverse()) p.push(7)
  if (cell.isInvisible()) p.push(8)
  if (cell.isStrikethrough()) p.push(9)
  if (cell.isOverline()) p.push(53)
  p.push(...color(cell.isFgPalette(), cell.isFgRGB(), cell.getFgColor(), 30, 90, 38))
  p.push(...color(cell.isBgPalette(), cell.isBgRGB(), cell.getBgColor(), 40, 100, 48))
  return `\x1b[${p.join(';')}m`
}

function color(palette: boolean, rgb: boolean, value: number, base: number, bright: number, extended: number): (number | string)[] {
  if (rgb) return [`${extended};2;${(value >> 16) & 255};${(value >> 8) & 255};${value & 255}`]
  if (!palette) return []
  if (value < 8) return [base + value]
  if (value < 16) return [bright + value - 8]
  return [`${extended};5;${value}`]
}
