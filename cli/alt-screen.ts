/**
 * Takes the remote program's alternate-screen switches (DEC private modes 47, 1047, 1049) out of
 * the bytes `termkeep attach` writes to the local terminal, which stays on its own alternate screen
 * for the whole attach: a remote `?1049l` (quitting less or vim) must not drop it back to the
 * user's shell screen, nor a remote `?1049h` stack on top of it. Other modes set in the same
 * sequence (`CSI ? 1049 ; 1 h`) are kept. The bytes are cut into pieces that end right after each
 * switch, so the caller can act in its place at the exact point in the stream.
 *
 * Pure and incremental: a switch split across chunks is recognised, because a chunk that ends
 * inside what may still become `CSI ? <digits> h|l` keeps that tail for the next chunk. Works on
 * the bytes as Latin-1 (one char per byte), so UTF-8 text passes unchanged.
 */

const ALT_MODES = new Set(['47', '1047', '1049'])
const PRIVATE_MODE = /\x1b\[\?([0-9;:]*)([hl])/g
/** A chunk's tail that may be the start of a private mode sequence, kept for the next chunk. */
const OPEN_TAIL = /\x1b(?:\[(?:\?[0-9;:]*)?)?$/
/** A longer "open" tail is not a mode switch anyone sends; it passes through rather than waits. */
const MAX_TAIL = 64

export type AltSwitch = 'enter' | 'leave'

export interface Piece {
  /** The remote bytes of this piece, unchanged (for an emulator that tracks the remote screen). */
  raw: Uint8Array
  /** The same bytes without alternate-screen switches, for the local terminal. */
  local: Uint8Array
  /** Set when the piece ends with a switch: what the remote screen did there. */
  switched?: AltSwitch
}

export class AltScreenFilter {
  #tail = ''

  /** Filters one chunk; a possibly incomplete sequence at its end waits for the next chunk. */
  push(bytes: Uint8Array): Piece[] {
    let text = this.#tail + Buffer.from(bytes).toString('latin1')
    const open = OPEN_TAIL.exec(text)
    this.#tail = open && open[0].length <= MAX_TAIL ? open[0] : ''
    if (this.#tail) text = text.slice(0, -this.#tail.length)
    const pieces: Piece[] = []
    let start = 0
    for (const match of text.matchAll(PRIVATE_MODE)) {
      const params = match[1].split(';')
      if (!params.some((p) => ALT_MODES.has(p))) continue
      const kept = params.filter((p) => p !== '' && !ALT_MODES.has(p))
      const end = match.index + match[0].length
      const local = text.slice(start, match.index) + (kept.length > 0 ? `\x1b[?${kept.join(';')}${match[2]}` : '')
      pieces.push({ raw: latin1(text.slice(start, end)), local: latin1(local), switched: match[2] === 'h' ? 'enter' : 'leave' })
      start = end
    }
    if (start < text.length) pieces.push({ raw: latin1(text.slice(start)), local: latin1(text.slice(start)) })
    return pieces
  }
}

function latin1(text: string): Uint8Array {
  return Buffer.from(text, 'latin1')
}
