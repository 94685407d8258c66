/**
 * The explicit cursor suffix of a follow snapshot. @xterm/addon-serialize can restore the cursor
 * one column off after a full-row write and never restores cursor visibility (xterm.js #6165,
 * #3364), so the snapshot ends with CUP to the exact position and DECTCEM.
 *
 * xterm keeps "wrap pending" (the cursor after writing the last column) as cursorX === cols, which
 * no CUP can express; the suffix recreates it the way it arose, by rewriting the last cell of the
 * row with its own attributes.
 */
import type { IBufferCell, Terminal } from '@xterm/headless'

export function cursorRestoreSuffix(terminal: Terminal): string {
  const buffer = terminal.buffer.active
  const x = buffer.cursorX
  const y = buffer.cursorY
  let suffix: string
  if (x < terminal.cols) {
    suffix = `\x1b[${y + 1};${x + 1}H`
  } else {
    const line = buffer.getLine(buffer.baseY + y)
    let column = terminal.cols - 1
    let cell = line?.getCell(column)
    if (cell && cell.getWidth() === 0 && column > 0) cell = line?.getCell(--column) // a wide char's tail
    const chars = cell?.getChars() || ' '
    suffix = `\x1b[${y + 1};${column + 1}H${cell ? sgr(cell) : ''}${chars}\x1b[0m`
  }
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
