/**
 * Turns a decoded display into the escape sequences that rebuild it in a fresh terminal of the
 * same size (xterm.js in a browser, @xterm/headless in tests and the CLI): history and viewport
 * in the normal buffer, the live alternate screen if one is active, then cursor, modes, palette
 * and title. Soft-wrapped rows are reproduced by real auto-wrap, so the wrapped flags (and thus
 * reflow on a later resize) come back too. Pure string building; runs anywhere.
 */
import { ATTR, type CellStyle, type Color } from '../../schema/wire/display.ts'
import type { DecodedDisplay, DecodedRow } from './decode.ts'

const ESC = '\x1b'
const CSI = `${ESC}[`

function colorParams(base: number, c: Color | undefined): string {
  if (c === undefined) return ''
  if (typeof c === 'number') {
    if (base !== 58 && c < 8) return `;${base - 8 + c}`
    if (base !== 58 && c < 16) return `;${base - 8 + 60 + c - 8}`
    return `;${base};5;${c}`
  }
  const n = parseInt(c.slice(1), 16)
  return `;${base};2;${(n >> 16) & 255};${(n >> 8) & 255};${n & 255}`
}

/** The full SGR for a style, starting from a reset. */
export function sgr(style: CellStyle): string {
  let p = '0'
  const a = style.a ?? 0
  if (a & ATTR.bold) p += ';1'
  if (a & ATTR.dim) p += ';2'
  if (a & ATTR.italic) p += ';3'
  if (a & ATTR.underline) p += style.u ? `;4:${style.u}` : ';4'
  if (a & ATTR.blink) p += ';5'
  if (a & ATTR.inverse) p += ';7'
  if (a & ATTR.invisible) p += ';8'
  if (a & ATTR.strikethrough) p += ';9'
  if (a & ATTR.overline) p += ';53'
  p += colorParams(38, style.fg) + colorParams(48, style.bg) + colorParams(58, style.ul)
  return `${CSI}${p}m`
}

class Writer {
  out: string[] = []
  #style = -1
  constructor(
    readonly styles: CellStyle[],
    readonly cols: number,
  ) {}

  style(id: number): void {
    if (id === this.#style) return
    this.#style = id
    this.out.push(sgr(this.styles[id] ?? {}))
  }

  /** Erase-style: erased cells only keep the background. */
  blankStyle(id: number): void {
    const bg = this.styles[id]?.bg
    if (bg === undefined) return this.style(0)
    this.#style = -1
    this.out.push(sgr({ bg }))
  }

  forget(): void {
    this.#style = -1
  }

  push(s: string): void {
    this.out.push(s)
  }

  /** Writes cells [from, to) of a row, starting with the cursor at column `from`. */
  cells(row: DecodedRow, from: number, to: number): void {
    const cells = row.cells
    let x = from
    while (x < to) {
      const cell = cells[x]
      if (cell.blank) {
        let n = 1
        while (x + n < to && cells[x + n].blank && cells[x + n].style === cell.style) n++
        this.blankStyle(cell.style)
        this.push(`${CSI}${n}X`)
        if (x + n < this.cols) this.push(`${CSI}${n}C`)
        x += n
      } else if (cell.width === 0) {
        x++
      } else {
        this.style(cell.style)
        this.push(cell.chars)
        x += cell.width
      }
    }
  }
}

/**
 * Writes rows top to bottom from the cursor's row, scrolling as a terminal does. A row that
 * continues onto a wrapped row ends with the wrap pending (x = cols), so the next print wraps.
 */
function writeRows(w: Writer, rows: DecodedRow[]): void {
  const cols = w.cols
  let fix: number | undefined
  rows.forEach((row, i) => {
    const cells = row.cells
    const end = cells.length
    let from = 0
    if (i > 0 && row.wrapped) {
      const first = cells[0]
      if (first && !first.blank && first.width !== 0) {
        w.style(first.style)
        w.push(first.chars)
        from = first.width
      } else {
        w.style(0)
        w.push(' \r') // wrap with a placeholder, then write the row from column 0 over it
      }
      if (fix !== undefined) {
        // Restore the previous row's last cell, which a placeholder space stood in for.
        w.push(`${ESC}7${CSI}A${CSI}${cols}G`)
        w.blankStyle(fix)
        w.push(`${CSI}X${ESC}8`)
        w.forget()
        fix = undefined
      }
    } else if (i > 0) {
      w.style(0)
      w.push('\r\n')
    }
    const next = rows[i + 1]
    const last = end === cols ? cells[cols - 1] : undefined
    const nextFirst = next?.cells[0]
    let mode: 'plain' | 'pending' | 'wide' | 'placeholder' = 'plain'
    if (next?.wrapped) {
      if (last && !last.blank) mode = 'pending'
      else if (nextFirst?.width === 2 && (last ? last.style === nextFirst.style : end === cols - 1 && nextFirst.style === 0)) {
        // A wide character that did not fit: printing it at the last column blanks that cell with
        // its own style and wraps, exactly as the original output did.
        mode = 'wide'
      } else mode = 'placeholder'
    }
    const stop = mode === 'plain' || mode === 'pending' ? end : Math.min(end, cols - 1)
    w.cells(row, from, stop)
    if (i > 0 && row.wrapped && end < cols) {
      // A line made by wrapping was filled with the background in effect at that moment.
      w.style(0)
      w.push(`${CSI}${cols - Math.max(end, from)}X`)
    }
    if (mode === 'wide') w.push(`${CSI}${cols}G`)
    if (mode === 'placeholder') {
      w.push(`${CSI}${cols}G`)
      w.style(0)
      w.push(' ')
      fix = last?.style ?? 0
    }
  })
}

function sanitize(title: string): string {
  return title.replace(/[\x00-\x1f\x7f-\x9f]/g, '')
}

function rgbSpec(hex: string): string {
  return `rgb:${hex.slice(1, 3)}/${hex.slice(3, 5)}/${hex.slice(5, 7)}`
}

/**
 * Exact wrapped flags for the oldest history row need a replay terminal whose scrollback equals
 * the history length (the CLI and tests do that; a browser may use more).
 */
export interface ReplayOptions {
  /** Start with a full reset (RIS), for a terminal that already shows something. */
  reset?: boolean
}

/** The escape sequences that rebuild `display` in a terminal of size begin.cols × begin.rows. */
export function replayAnsi(display: DecodedDisplay, options: ReplayOptions = {}): string {
  const { begin } = display
  const w = new Writer(display.styles, begin.cols)
  if (options.reset) w.push(`${ESC}c`)
  const normal = [...display.history, ...padRows(display.viewport, begin.rows)]
  if (normal[0]?.wrapped) {
    // The oldest row continues one that was already trimmed: wrap it from a filler row, which the
    // replay terminal trims again when its scrollback equals the history length.
    normal.unshift({ wrapped: false, cells: Array.from({ length: begin.cols }, () => FILLER) })
  }
  writeRows(w, normal)
  let active = display.viewport
  if (begin.alternateScreen) {
    w.style(0)
    w.push(`${CSI}?1049h${CSI}H`)
    active = padRows(display.alternate, begin.rows)
    writeRows(w, active)
  }
  const m = begin.inputModes
  w.style(0)
  if (m.origin) w.push(`${CSI}?6h`)
  const { row, col } = begin.cursor
  const line = active[row]
  if (col >= begin.cols && line) {
    const last = line.cells[begin.cols - 1]
    const wide = last?.width === 0 ? line.cells[begin.cols - 2] : undefined
    if (wide) {
      w.push(`${CSI}${row + 1};${begin.cols - 1}H`)
      w.style(wide.style)
      w.push(wide.chars)
    } else if (last && !last.blank) {
      w.push(`${CSI}${row + 1};${begin.cols}H`)
      w.style(last.style)
      w.push(last.chars)
    } else w.push(`${CSI}${row + 1};${begin.cols}H`)
    w.style(0)
  } else w.push(`${CSI}${row + 1};${Math.min(col, begin.cols - 1) + 1}H`)
  const set = (on: boolean, mode: number) => on && w.push(`${CSI}?${mode}h`)
  set(m.applicationCursorKeys, 1)
  set(m.applicationKeypad, 66)
  set(m.bracketedPaste, 2004)
  set(m.focusReporting, 1004)
  set(m.reverseWraparound, 45)
  const tracking = { none: 0, x10: 9, vt200: 1000, drag: 1002, any: 1003 }[m.mouseTracking]
  if (tracking) w.push(`${CSI}?${tracking}h`)
  const encoding = { default: 0, utf8: 1005, sgr: 1006, urxvt: 1015, 'sgr-pixels': 1016 }[m.mouseEncoding]
  if (encoding) w.push(`${CSI}?${encoding}h`)
  if (!m.wraparound) w.push(`${CSI}?7l`)
  if (m.insert) w.push(`${CSI}4h`)
  if (!begin.cursor.visible) w.push(`${CSI}?25l`)
  const shape = { block: 1, underline: 3, bar: 5 }[begin.cursor.style] + (begin.cursor.blink ? 0 : 1)
  if (shape !== 2) w.push(`${CSI}${shape} q`)
  const changes = begin.palette.changes
  for (const [index, colour] of Object.entries(changes.indexed)) w.push(`${ESC}]4;${index};${rgbSpec(colour)}\x07`)
  if (changes.foreground) w.push(`${ESC}]10;${rgbSpec(changes.foreground)}\x07`)
  if (changes.background) w.push(`${ESC}]11;${rgbSpec(changes.background)}\x07`)
  if (changes.cursor) w.push(`${ESC}]12;${rgbSpec(changes.cursor)}\x07`)
  if (begin.title) w.push(`${ESC}]2;${sanitize(begin.title)}\x07`)
  return w.out.join('')
}

const FILLER = { chars: '.', width: 1, style: 0, blank: false } as const

function padRows(rows: DecodedRow[], count: number): DecodedRow[] {
  const out = rows.slice(0, count)
  while (out.length < count) out.push({ wrapped: false, cells: [] })
  return out
}
