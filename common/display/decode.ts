/**
 * Decodes a complete readDisplay transfer (begin, rows…, end) into rows of cells. Runs anywhere
 * (browser, Node, Workers): no runtime imports. The row format is documented in
 * schema/wire/display.ts.
 */
import {
  ROW_WRAPPED,
  type CellStyle,
  type DisplayBegin,
  type DisplayEnd,
  type EncodedRow,
  type RowsEvent,
} from '../../schema/wire/display.ts'

export interface DecodedCell {
  /** The cell's characters; '' for a blank (erased) cell and for a wide character's second cell. */
  chars: string
  /** 1, 2 for a wide character, 0 for the cell after a wide character. */
  width: 0 | 1 | 2
  /** Style-table id (0 = default). */
  style: number
  /** True for an erased cell: no character, but its style (background) still shows. */
  blank: boolean
}

export interface DecodedRow {
  wrapped: boolean
  /** Cells from column 0; cells beyond the last one are default blanks. */
  cells: DecodedCell[]
}

export interface DecodedDisplay {
  begin: DisplayBegin
  end: DisplayEnd
  styles: CellStyle[]
  viewport: DecodedRow[]
  alternate: DecodedRow[]
  /** Oldest first (the transfer sends history newest first). */
  history: DecodedRow[]
}

export function decodeRow(row: EncodedRow): DecodedRow {
  const cells: DecodedCell[] = []
  for (let i = 1; i + 1 < row.length; i += 2) {
    const style = row[i] as number
    const content = row[i + 1]
    if (typeof content === 'number') {
      for (let n = 0; n < content; n++) cells.push({ chars: '', width: 1, style, blank: true })
    } else if (typeof content === 'string') {
      for (const chars of content) cells.push({ chars, width: 1, style, blank: false })
    } else {
      for (const chars of content) {
        if (chars === '') {
          const previous = cells[cells.length - 1]
          if (previous) previous.width = 2
          cells.push({ chars: '', width: 0, style, blank: false })
        } else cells.push({ chars, width: 1, style, blank: false })
      }
    }
  }
  return { wrapped: ((row[0] as number) & ROW_WRAPPED) !== 0, cells }
}

/** Rebuilds the display from the parts of one transfer, in the order they arrived. */
export function decodeDisplay(begin: DisplayBegin, parts: RowsEvent[], end: DisplayEnd): DecodedDisplay {
  const styles: CellStyle[] = [{}]
  const display: DecodedDisplay = { begin, end, styles, viewport: [], alternate: [], history: [] }
  // A `partial` event's last row continues in the next event's first row (a row split over events).
  let continues = false
  for (const part of parts) {
    part.styles.forEach((style, i) => (styles[part.styleBase + i] = style))
    const target = display[part.region]
    part.rows.forEach((row, i) => {
      const decoded = decodeRow(row)
      const at = part.index + i
      if (i === 0 && continues && target[at]) target[at].cells.push(...decoded.cells)
      else target[at] = decoded
    })
    if (part.rows.length > 0) continues = part.partial === true
  }
  display.history.reverse()
  return display
}
