/**
 * The cell walker: one @xterm/headless buffer line → one EncodedRow (schema/wire/display.ts).
 * Runs of equally styled cells share a style-table id; blank cells keep their style (styled
 * blanks); trailing default blanks are trimmed. One cell object is reused for the whole walk, and
 * a style is only rebuilt when a cell's raw attribute words differ from the previous cell's.
 */
import type { IBufferCell, IBufferLine } from '@xterm/headless'
import { ATTR, ROW_WRAPPED, type CellStyle, type Color, type EncodedRow } from '../../schema/wire/display.ts'

// xterm colour-mode bits (getFgColorMode / getBgColorMode).
const CM_P16 = 0x1000000
const CM_P256 = 0x2000000
const CM_RGB = 0x3000000
const CM_MASK = 0x3000000

/**
 * Internal CellData fields. The public IBufferCell lacks underline style and colour (SGR 4:n, 58);
 * the object that `getNullCell()` returns is a CellData, which has them. Everything else below
 * goes through the public API; these are read only when present.
 */
interface CellInternals {
  fg?: number
  bg?: number
  extended?: { underlineStyle: number; underlineColor: number }
  hasExtendedAttrs?(): number
  getUnderlineStyle?(): number
}

/** Interns styles per revision: ids in order of first use, 0 = default. */
export class StyleTable {
  readonly styles: CellStyle[] = [{}]
  readonly #ids = new Map<string, number>([['{}', 0]])

  intern(style: CellStyle): number {
    const key = JSON.stringify(style)
    let id = this.#ids.get(key)
    if (id === undefined) {
      id = this.styles.length
      this.styles.push(style)
      this.#ids.set(key, id)
    }
    return id
  }

  get size(): number {
    return this.styles.length
  }
}

function color(mode: number, value: number): Color | undefined {
  if (mode === CM_P16 || mode === CM_P256) return value
  if (mode === CM_RGB) return `#${value.toString(16).padStart(6, '0')}`
  return undefined
}

/** The style of a cell, built from the public attribute API plus underline internals. */
export function styleOf(cell: IBufferCell): CellStyle {
  const style: CellStyle = {}
  const fg = color(cell.getFgColorMode(), cell.getFgColor())
  if (fg !== undefined) style.fg = fg
  const bg = color(cell.getBgColorMode(), cell.getBgColor())
  if (bg !== undefined) style.bg = bg
  let a = 0
  if (cell.isBold()) a |= ATTR.bold
  if (cell.isDim()) a |= ATTR.dim
  if (cell.isItalic()) a |= ATTR.italic
  if (cell.isUnderline()) a |= ATTR.underline
  if (cell.isBlink()) a |= ATTR.blink
  if (cell.isInverse()) a |= ATTR.inverse
  if (cell.isInvisible()) a |= ATTR.invisible
  if (cell.isStrikethrough()) a |= ATTR.strikethrough
  if (cell.isOverline()) a |= ATTR.overline
  const internals = cell as IBufferCell & CellInternals
  if (a & ATTR.underline && internals.getUnderlineStyle) {
    const u = internals.getUnderlineStyle()
    if (u > 1) style.u = u
  }
  // Without its own underline colour a cell reports the foreground; only an explicit one counts.
  const ext = internals.hasExtendedAttrs?.() ? internals.extended : undefined
  if (ext && ext.underlineColor !== -1) {
    const mode = ext.underlineColor & CM_MASK
    const ul = color(mode, ext.underlineColor & (mode === CM_RGB ? 0xffffff : 0xff))
    if (ul !== undefined) style.ul = ul
  }
  if (a !== 0) style.a = a
  return style
}

/**
 * Internal BufferLine storage (@xterm/headless 6): 3 words per cell — content (code point bits
 * 0–20, combined flag bit 21, width bits 22–23), fg and bg attribute words. Reading them directly
 * is several times faster than a getCell per cell; cells whose style must be decoded still go
 * through the public getCell/styleOf. Absent (another xterm build) → the public API only.
 */
interface LineInternals {
  _line?: {
    _data?: Uint32Array
    _combined?: Record<number, string>
    _extendedAttrs?: Record<number, { underlineStyle: number; underlineColor: number } | undefined>
  }
}

const HAS_CONTENT = 0x3fffff
const IS_COMBINED = 0x200000
const CODEPOINT = 0x1fffff
const BG_HAS_EXTENDED = 0x10000000

export interface RowEncoderOptions {
  /** Walk cells through the public API only (tests compare both paths). */
  publicApiOnly?: boolean
}

/** Reads cells of one revision; holds the reused cell and the style fast path. */
export class RowEncoder {
  readonly #cell: IBufferCell
  readonly #publicOnly: boolean
  readonly #rawStyles = new Map<string, number>()
  readonly styles: StyleTable
  #rawFg = -1
  #rawBg = -1
  #rawExt = -1
  #rawUl = -1
  #lastStyle = 0

  constructor(cell: IBufferCell, styles = new StyleTable(), options: RowEncoderOptions = {}) {
    this.#cell = cell
    this.styles = styles
    this.#publicOnly = options.publicApiOnly ?? false
  }

  #styleId(): number {
    const c = this.#cell as IBufferCell & CellInternals
    if (c.fg !== undefined && c.bg !== undefined) {
      const ext = c.extended ? c.extended.underlineStyle : 0
      const ul = c.extended ? c.extended.underlineColor : 0
      if (c.fg === this.#rawFg && c.bg === this.#rawBg && ext === this.#rawExt && ul === this.#rawUl) return this.#lastStyle
      this.#rawFg = c.fg
      this.#rawBg = c.bg
      this.#rawExt = ext
      this.#rawUl = ul
    }
    this.#lastStyle = c.isAttributeDefault() ? 0 : this.styles.intern(styleOf(c))
    return this.#lastStyle
  }

  /** Encodes `line` as a row `cols` wide (a missing line is an empty row). */
  encode(line: IBufferLine | undefined, cols: number): EncodedRow {
    if (line && !this.#publicOnly) {
      const internal = (line as IBufferLine & LineInternals)._line
      if (internal?._data) return this.#encodeWords(line, internal._data, internal, cols)
    }
    return this.#encodePublic(line, cols)
  }

  #encodeWords(line: IBufferLine, data: Uint32Array, internal: NonNullable<LineInternals['_line']>, cols: number): EncodedRow {
    const row: EncodedRow = [line.isWrapped ? ROW_WRAPPED : 0]
    let end = Math.min(cols, line.length, Math.floor(data.length / 3))
    while (end > 0) {
      const i = (end - 1) * 3
      if ((data[i] & HAS_CONTENT) !== 0 || data[i] >>> 22 !== 1 || data[i + 1] !== 0 || data[i + 2] !== 0) break
      end--
    }
    let runStyle = -1
    let runKind = -1 // 0 simple code points, 1 blanks, 2 clusters
    let text = ''
    let blanks = 0
    let cluster: string[] = []
    let rawFg = -1
    let rawBg = -1
    let style = 0
    for (let x = 0; x < end; x++) {
      const i = x * 3
      const content = data[i]
      const fg = data[i + 1]
      const bg = data[i + 2]
      if (fg !== rawFg || bg !== rawBg || bg & BG_HAS_EXTENDED) {
        rawFg = fg
        rawBg = bg
        style = this.#styleFromWords(line, x, fg, bg, internal)
      }
      const width = (content >>> 22) & 3
      let kind: number
      if ((content & HAS_CONTENT) === 0) kind = width === 1 ? 1 : 2
      else kind = width === 1 && !(content & IS_COMBINED) ? 0 : 2
      if (style !== runStyle || kind !== runKind) {
        if (runKind === 0) row.push(runStyle, text)
        else if (runKind === 1) row.push(runStyle, blanks)
        else if (runKind === 2) row.push(runStyle, cluster)
        runStyle = style
        runKind = kind
        text = ''
        blanks = 0
        cluster = []
      }
      if (kind === 0) {
        const code = content & CODEPOINT
        text += code < 0x10000 ? String.fromCharCode(code) : String.fromCodePoint(code)
      } else if (kind === 1) blanks++
      else if ((content & HAS_CONTENT) === 0) cluster.push('')
      else if (content & IS_COMBINED) cluster.push(internal._combined?.[x] ?? (line.getCell(x, this.#cell), this.#cell.getChars()))
      else cluster.push(String.fromCodePoint(content & CODEPOINT))
    }
    if (runKind === 0) row.push(runStyle, text)
    else if (runKind === 1) row.push(runStyle, blanks)
    else if (runKind === 2) row.push(runStyle, cluster)
    return row
  }

  #styleFromWords(line: IBufferLine, x: number, fg: number, bg: number, internal: NonNullable<LineInternals['_line']>): number {
    if (fg === 0 && bg === 0) return 0
    const ext = bg & BG_HAS_EXTENDED ? internal._extendedAttrs?.[x] : undefined
    const key = ext ? `${fg},${bg},${ext.underlineStyle},${ext.underlineColor}` : `${fg},${bg}`
    let id = this.#rawStyles.get(key)
    if (id === undefined) {
      line.getCell(x, this.#cell)
      id = this.#cell.isAttributeDefault() ? 0 : this.styles.intern(styleOf(this.#cell))
      this.#rawStyles.set(key, id)
    }
    return id
  }

  #encodePublic(line: IBufferLine | undefined, cols: number): EncodedRow {
    const row: EncodedRow = [line?.isWrapped ? ROW_WRAPPED : 0]
    if (!line) return row
    const cell = this.#cell
    let end = Math.min(cols, line.length)
    // Trim trailing default blanks (erased cells with no style).
    while (end > 0) {
      line.getCell(end - 1, cell)
      if (cell.getCode() !== 0 || cell.getWidth() !== 1 || !cell.isAttributeDefault()) break
      end--
    }
    let runStyle = -1
    let text = ''
    let blanks = 0
    let cluster: string[] | undefined
    const flush = () => {
      if (runStyle < 0) return
      if (text) row.push(runStyle, text)
      else if (blanks) row.push(runStyle, blanks)
      else if (cluster) row.push(runStyle, cluster)
      text = ''
      blanks = 0
      cluster = undefined
    }
    for (let x = 0; x < end; x++) {
      line.getCell(x, cell)
      const style = this.#styleId()
      const width = cell.getWidth()
      const code = cell.getCode()
      // kind: 0 simple one-column code point, 1 blank, 2 cluster / wide / wide tail
      let kind: number
      let chars = ''
      if (width === 1 && code === 0) kind = 1
      else {
        chars = width === 0 ? '' : cell.getChars()
        const single = chars.length === 1 || (chars.length === 2 && (chars.codePointAt(0) ?? 0) > 0xffff)
        kind = width === 1 && single ? 0 : 2
      }
      const runKind = runStyle < 0 ? -1 : text ? 0 : blanks ? 1 : 2
      if (style !== runStyle || kind !== runKind) {
        flush()
        runStyle = style
      }
      if (kind === 0) text += chars
      else if (kind === 1) blanks++
      else (cluster ??= []).push(chars)
    }
    flush()
    return row
  }
}
