/**
 * A command's output as the plain text an agent reads (pure). The bytes are decoded as UTF-8,
 * escape sequences removed (strip-ansi), and the rest written onto rows `cols` wide the way a
 * terminal writes them: a carriage return goes back to the row's start and what follows
 * overwrites, a backspace steps back, a row that fills up wraps. So a progress bar leaves its last
 * drawing, and zsh's end-of-partial-line mark (`%` and a row of spaces, then `\r \r`) leaves the
 * output as the screen shows it instead of wiping it (a split-on-CR reading keeps only " ").
 * Wrapped rows are joined back into one line; trailing blanks are trimmed.
 */
import stripAnsi from 'strip-ansi'

const TAB = 8

/** Cells a code point takes: 0 for a combining mark, 2 for East Asian wide and emoji, else 1. */
function cellWidth(code: number): number {
  if (code < 0x300) return 1
  if (/\p{M}/u.test(String.fromCodePoint(code))) return 0
  const wide =
    (code >= 0x1100 && code <= 0x115f) ||
    (code >= 0x2e80 && code <= 0xa4cf) ||
    (code >= 0xac00 && code <= 0xd7a3) ||
    (code >= 0xf900 && code <= 0xfaff) ||
    (code >= 0xfe30 && code <= 0xfe4f) ||
    (code >= 0xff00 && code <= 0xff60) ||
    (code >= 0xffe0 && code <= 0xffe6) ||
    (code >= 0x1f300 && code <= 0x1f64f) ||
    (code >= 0x1f900 && code <= 0x1f9ff) ||
    (code >= 0x20000 && code <= 0x3fffd)
  return wide ? 2 : 1
}

interface Row {
  cells: string[]
  /** Continues on the next row (a soft wrap, not a newline). */
  wrapped: boolean
}

export function commandText(bytes: Uint8Array, cols: number): string {
  const text = stripAnsi(new TextDecoder('utf-8', { ignoreBOM: true }).decode(bytes))
  const rows: Row[] = [{ cells: [], wrapped: false }]
  let row = rows[0]!
  let col = 0
  const newRow = (wrapped: boolean) => {
    row.wrapped = wrapped
    row = { cells: [], wrapped: false }
    rows.push(row)
    col = 0
  }
  for (const char of text) {
    const code = char.codePointAt(0)!
    if (char === '\n') newRow(false)
    else if (char === '\r') col = 0
    else if (char === '\b') col = Math.max(0, col - 1)
    else if (char === '\t') col = Math.min(cols - 1, (Math.floor(col / TAB) + 1) * TAB)
    else if (code < 0x20 || (code >= 0x7f && code < 0xa0)) continue
    else {
      const width = cellWidth(code)
      if (width === 0) {
        if (col > 0) row.cells[col - 1] = (row.cells[col - 1] ?? ' ') + char
        continue
      }
      if (col + width > cols) newRow(true)
      while (row.cells.length < col) row.cells.push(' ')
      row.cells[col] = char
      if (width === 2) row.cells[col + 1] = ''
      col += width
    }
  }
  let out = ''
  for (const r of rows) out += r.cells.join('') + (r.wrapped ? '' : '\n')
  return out
    .split('\n')
    .map((line) => line.trimEnd())
    .join('\n')
    .replace(/\n+$/, '')
}

/**
 * Output bytes kept for a command's text: the newest `max` of everything added (whole chunks
 * dropped from the front, the rest cut once when read), and the last bytes taken back (a mark
 * that turned out to end the output, once its last byte arrived).
 */
export class ByteTail {
  readonly #max: number
  #chunks: Uint8Array[] = []
  #kept = 0
  /** Bytes added and not taken back. */
  total = 0

  constructor(max: number) {
    this.#max = max
  }

  add(bytes: Uint8Array): void {
    if (bytes.length === 0) return
    // Copied: the journal's buffers are views it reuses.
    this.#chunks.push(Uint8Array.prototype.slice.call(bytes))
    this.#kept += bytes.length
    this.total += bytes.length
    while (this.#chunks.length > 1 && this.#kept - this.#chunks[0]!.length >= this.#max) this.#kept -= this.#chunks.shift()!.length
  }

  /** Takes back the last `n` bytes added. */
  retract(n: number): void {
    this.total -= n
    let left = n
    while (left > 0 && this.#chunks.length > 0) {
      const last = this.#chunks.at(-1)!
      const cut = Math.min(left, last.length)
      if (cut === last.length) this.#chunks.pop()
      else this.#chunks[this.#chunks.length - 1] = last.subarray(0, last.length - cut)
      this.#kept -= cut
      left -= cut
    }
  }

  /** The kept bytes (at most `max`), and how many came before them. */
  bytes(): { bytes: Uint8Array; omitted: number } {
    const all = Buffer.concat(this.#chunks, this.#kept)
    let cut = Math.max(0, all.length - this.#max)
    // Never start inside a UTF-8 sequence: skip continuation bytes.
    while (cut < all.length && cut > 0 && (all[cut]! & 0xc0) === 0x80) cut++
    return { bytes: all.subarray(cut), omitted: this.total - (all.length - cut) }
  }
}
