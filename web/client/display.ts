/**
 * readDisplay on the client side (contract: schema/wire/display.ts). `DisplayStaging` collects one
 * transfer privately — `begin`, ordered `rows`, then `end` — and yields a display only when `end`
 * arrived; an interrupted or cancelled transfer yields nothing and the caller keeps what it shows.
 * `displayToAnsi` turns a display into bytes that replay it into a freshly reset terminal of the
 * same geometry (xterm.js on the page, the user's own terminal for `termkeep display`): colours
 * (palette and RGB), attributes, styled blanks, wide characters, soft wraps, the alternate screen
 * and the cursor (position, visibility, style).
 */
import { ATTR, ROW_WRAPPED, type CellStyle, type Color, type DisplayBegin, type DisplayEnd, type EncodedRow, type RowsEvent } from '../../schema/wire/display.ts'
import { terminalPath, type TermkeepClient } from './api.ts'

export interface Display {
  begin: DisplayBegin
  end: DisplayEnd
  /** Top to bottom. */
  viewport: EncodedRow[]
  alternate: EncodedRow[]
  /** Oldest first (the wire sends history newest first). */
  history: EncodedRow[]
  /** The full style table (index 0 = default). */
  styles: CellStyle[]
}

/** Collects one readDisplay transfer; `finish` answers only a complete one. */
export class DisplayStaging {
  #begin: DisplayBegin | undefined
  #end: DisplayEnd | undefined
  #styles: CellStyle[] = [{}]
  #regions: Record<RowsEvent['region'], EncodedRow[]> = { viewport: [], alternate: [], history: [] }

  accept(event: string, data: unknown): void {
    if (event === 'begin') {
      this.#begin = data as DisplayBegin
    } else if (event === 'rows') {
      const rows = data as RowsEvent
      rows.styles.forEach((style, i) => (this.#styles[rows.styleBase + i] = style))
      const region = this.#regions[rows.region]
      rows.rows.forEach((row, i) => (region[rows.index + i] = row))
    } else if (event === 'end') {
      this.#end = data as DisplayEnd
    }
  }

  finish(): Display | undefined {
    if (!this.#begin || !this.#end) return undefined
    const dense = (rows: EncodedRow[]) => Array.from(rows, (row) => row ?? [0])
    return {
      begin: this.#begin,
      end: this.#end,
      viewport: dense(this.#regions.viewport),
      alternate: dense(this.#regions.alternate),
      history: dense(this.#regions.history).reverse(),
      styles: this.#styles,
    }
  }
}

/** Reads the latest settled revision; resolves only with a complete display. */
export async function readDisplay(client: TermkeepClient, sid: string, tid: string, signal?: AbortSignal): Promise<Display> {
  const staging = new DisplayStaging()
  const events = await client.stream(`${terminalPath(sid, tid)}/display`, { signal })
  for await (const event of events) {
    staging.accept(event.event, JSON.parse(event.data))
    if (event.event === 'end') break
  }
  const display = staging.finish()
  if (!display) throw new Error('the display transfer ended before it was complete')
  return display
}

function sgrColor(color: Color, base: 30 | 40): string {
  if (typeof color === 'string') {
    const n = parseInt(color.slice(1), 16)
    return `${base + 8};2;${n >> 16};${(n >> 8) & 255};${n & 255}`
  }
  if (color < 8) return String(base + color)
  if (color < 16) return String(base + 60 + color - 8)
  return `${base + 8};5;${color}`
}

const ATTR_SGR: [number, string][] = [
  [ATTR.bold, '1'],
  [ATTR.dim, '2'],
  [ATTR.italic, '3'],
  [ATTR.blink, '5'],
  [ATTR.inverse, '7'],
  [ATTR.invisible, '8'],
  [ATTR.strikethrough, '9'],
  [ATTR.overline, '53'],
]

/** The SGR that sets exactly this style from any state (it starts with a reset). */
export function sgrOf(style: CellStyle | undefined): string {
  const parts = ['0']
  const a = style?.a ?? 0
  for (const [bit, code] of ATTR_SGR) if (a & bit) parts.push(code)
  if (a & ATTR.underline) parts.push(style?.u && style.u > 1 ? `4:${style.u}` : '4')
  if (style?.fg !== undefined) parts.push(sgrColor(style.fg, 30))
  if (style?.bg !== undefined) parts.push(sgrColor(style.bg, 40))
  if (style?.ul !== undefined) {
    const ul = style.ul
    parts.push(typeof ul === 'string' ? `58;2;${parseInt(ul.slice(1, 3), 16)};${parseInt(ul.slice(3, 5), 16)};${parseInt(ul.slice(5, 7), 16)}` : `58;5;${ul}`)
  }
  return `\x1b[${parts.join(';')}m`
}

/** One row's cells as ANSI. Blanks are written as styled spaces, so styled blanks keep their look. */
function rowToAnsi(row: EncodedRow, styles: CellStyle[], out: string[], color = true): number {
  let current = -1
  let cells = 0
  for (let i = 1; i + 1 < row.length; i += 2) {
    const style = row[i] as number
    const content = row[i + 1]
    if (color && style !== current) {
      out.push(sgrOf(styles[style]))
      current = style
    }
    if (typeof content === 'number') {
      out.push(' '.repeat(content))
      cells += content
    } else if (typeof content === 'string') {
      out.push(content)
      cells += Array.from(content).length
    } else {
      out.push(content.join('')) // a wide character's "" tail adds nothing; the terminal advances two
      cells += content.length
    }
  }
  if (color) out.push('\x1b[0m')
  return cells
}

function rowsToAnsi(rows: EncodedRow[], styles: CellStyle[], cols: number, out: string[]): void {
  rows.forEach((row, i) => {
    const cells = rowToAnsi(row, styles, out)
    const next = rows[i + 1]
    if (next === undefined) return
    // A soft-wrapped continuation flows on from the full row above (its trimmed default blanks
    // written back so the wrap happens exactly at the edge); anything else starts a new line.
    if ((next[0] as number) & ROW_WRAPPED) out.push(' '.repeat(Math.max(0, cols - cells)))
    else out.push('\r\n')
  })
}

export interface AnsiOptions {
  /** Re-apply palette entries the application changed (OSC 4/10/11/12). Off for a user's own terminal. */
  palette?: boolean
}

/**
 * ANSI that reproduces the display in a terminal of `begin.cols` × `begin.rows` that was just reset:
 * the history scrolls into the scrollback, the viewport is drawn in place, the alternate screen
 * (when it was active) is drawn over it, then the cursor is placed and shown or hidden.
 */
export function displayToAnsi(display: Display, options: AnsiOptions = {}): string {
  const { begin } = display
  const out: string[] = []
  if (options.palette) {
    const changes = begin.palette.changes
    for (const [index, color] of Object.entries(changes.indexed)) out.push(`\x1b]4;${index};rgb:${color.slice(1, 3)}/${color.slice(3, 5)}/${color.slice(5, 7)}\x07`)
    if (changes.foreground) out.push(`\x1b]10;${changes.foreground}\x07`)
    if (changes.background) out.push(`\x1b]11;${changes.background}\x07`)
    if (changes.cursor) out.push(`\x1b]12;${changes.cursor}\x07`)
  }
  // The viewport is exactly `rows` lines (trailing blank ones may not be on the wire), so the
  // history lands in the scrollback and the absolute cursor position lines up.
  const viewport = Array.from({ length: begin.rows }, (_, i) => display.viewport[i] ?? [0])
  rowsToAnsi([...display.history, ...viewport], display.styles, begin.cols, out)
  if (begin.alternateScreen) {
    out.push('\x1b[?1047h\x1b[H\x1b[2J')
    rowsToAnsi(display.alternate.slice(0, begin.rows), display.styles, begin.cols, out)
  }
  const { cursor } = begin
  const row = Math.min(Math.max(cursor.row, 0), begin.rows - 1) + 1
  const col = Math.min(Math.max(cursor.col, 0), begin.cols - 1) + 1
  const shape = { block: 1, underline: 3, bar: 5 }[cursor.style] + (cursor.blink ? 0 : 1)
  out.push(`\x1b[${row};${col}H`, `\x1b[${shape} q`, cursor.visible ? '\x1b[?25h' : '\x1b[?25l')
  return out.join('')
}

/**
 * The display as printable lines for a scrolling terminal of any width (`termkeep display`): the
 * history then the viewport (or the alternate screen when it was active), soft-wrapped rows joined
 * into one line, trailing empty rows dropped; no cursor movement, no palette changes.
 */
export function displayToLines(display: Display, options: { color?: boolean; history?: boolean } = {}): string {
  const { begin } = display
  const color = options.color ?? true
  const screen = begin.alternateScreen ? display.alternate : display.viewport
  const rows = [...(options.history === false ? [] : display.history), ...screen.slice(0, begin.rows)]
  while (rows.length > 0 && rows[rows.length - 1].length <= 1) rows.pop()
  const out: string[] = []
  rows.forEach((row, i) => {
    const cells = rowToAnsi(row, display.styles, out, color)
    const next = rows[i + 1]
    if (next !== undefined && (next[0] as number) & ROW_WRAPPED) out.push(' '.repeat(Math.max(0, begin.cols - cells)))
    else out.push('\n')
  })
  return out.join('')
}
