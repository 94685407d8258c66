/**
 * readDisplay on the client side (contract: schema/wire/display.ts). `DisplayStaging` collects one
 * transfer privately — `begin`, ordered `rows`, then `end` — and yields a display only when `end`
 * arrived; an interrupted or cancelled transfer yields nothing, and the caller keeps showing what
 * it showed. Decoding and replay into a terminal are the display module's own
 * (common/display/decode.ts, common/display/replay.ts: pure, runtime-free); this file adds the transfer
 * and a printable form for `termkeep display`.
 */
import { decodeDisplay, type DecodedDisplay, type DecodedRow } from '../../common/display/decode.ts'
import { sgr } from '../../common/display/replay.ts'
import type { DisplayBegin, DisplayEnd, RowsEvent } from '../../schema/wire/display.ts'
import { terminalPath, type TermkeepClient } from './api.ts'

export type { DecodedDisplay }

/** Collects one readDisplay transfer; `finish` answers only a complete one. */
export class DisplayStaging {
  #begin: DisplayBegin | undefined
  #parts: RowsEvent[] = []
  #end: DisplayEnd | undefined

  accept(event: string, data: unknown): void {
    if (event === 'begin') this.#begin = data as DisplayBegin
    else if (event === 'rows') this.#parts.push(data as RowsEvent)
    else if (event === 'end') this.#end = data as DisplayEnd
  }

  finish(): DecodedDisplay | undefined {
    if (!this.#begin || !this.#end) return undefined
    return decodeDisplay(this.#begin, this.#parts, this.#end)
  }
}

/** Reads the latest settled revision; resolves only with a complete display. */
export async function readDisplay(client: TermkeepClient, sid: string, tid: string, signal?: AbortSignal): Promise<DecodedDisplay> {
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

function rowText(row: DecodedRow, display: DecodedDisplay, color: boolean, out: string[]): number {
  let current = ''
  for (const cell of row.cells) {
    if (cell.width === 0) continue // a wide character's second cell
    if (color) {
      // Erased cells keep only their background, as the emulator shows them.
      const style = display.styles[cell.style] ?? {}
      const code = cell.blank ? sgr(style.bg === undefined ? {} : { bg: style.bg }) : sgr(style)
      if (code !== current) out.push(code)
      current = code
    }
    out.push(cell.blank ? ' ' : cell.chars)
  }
  if (color) out.push('\x1b[0m')
  return row.cells.length
}

/**
 * The display as printable lines for a scrolling terminal of any width (`termkeep display`): the
 * history then the viewport (or the alternate screen when it was active), soft-wrapped rows joined
 * into one line, trailing empty rows dropped; no cursor movement, no palette or mode changes.
 */
export function displayToLines(display: DecodedDisplay, options: { color?: boolean; history?: boolean } = {}): string {
  const { begin } = display
  const color = options.color ?? true
  const screen = (begin.alternateScreen ? display.alternate : display.viewport).slice(0, begin.rows)
  const rows = [...(options.history === false ? [] : display.history), ...screen].map((row) => row ?? { wrapped: false, cells: [] })
  while (rows.length > 0 && rows[rows.length - 1].cells.length === 0) rows.pop()
  const out: string[] = []
  rows.forEach((row, i) => {
    const cells = rowText(row, display, color, out)
    if (rows[i + 1]?.wrapped) out.push(' '.repeat(Math.max(0, begin.cols - cells)))
    else out.push('\n')
  })
  return out.join('')
}
