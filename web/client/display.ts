/**
 * readDisplay on the client side (contract: schema/wire/display.ts): the transfer over the
 * client's stream, staged by common/display/staging.ts (a display only when the transfer is
 * complete), and a printable form for `termkeep display`. Decoding and replay into a terminal are
 * common/display/decode.ts and replay.ts.
 */
import type { DecodedDisplay, DecodedRow } from '../../common/display/decode.ts'
import { sgr } from '../../common/display/replay.ts'
import { DisplayStaging } from '../../common/display/staging.ts'
import { terminalPath, type TermkeepClient } from './api.ts'

export type { DecodedDisplay }

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
