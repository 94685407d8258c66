/**
 * Terminal output and screens as the plain text an agent reads. Pure.
 *
 * Output bytes become text by decoding UTF-8, removing escape sequences (strip-ansi: colours,
 * cursor movement, OSC titles and links), reading CRLF as a newline, keeping of a line redrawn
 * with carriage returns (a progress bar) only its last drawing, and dropping the remaining
 * control characters but tab. What the screen shows is the emulator's business: use the screen.
 */
import stripAnsi from 'strip-ansi'
import { toBase64 } from '../../common/bytes.ts'
import type { ScreenProjection } from '../../schema/wire/display.ts'

/** C0 controls but tab and newline, and DEL (backspace, bell, shift-in/out …). */
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f]/g

export function plainText(text: string): string {
  return stripAnsi(text)
    .replace(/\r+\n/g, '\n')
    .split('\n')
    .map((line) => {
      const drawn = line.split('\r').filter((part) => part.length > 0)
      return (drawn.at(-1) ?? '').replace(CONTROLS, '')
    })
    .join('\n')
}

/** File bytes as a result shows them: the text when they are valid UTF-8, else base64; `encoding`
 * says which. */
export function shownBytes(bytes: Uint8Array): { encoding: 'utf8'; text: string } | { encoding: 'base64'; bytes: string } {
  try {
    return { encoding: 'utf8', text: new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(bytes) }
  } catch {
    return { encoding: 'base64', bytes: toBase64(bytes) }
  }
}

/**
 * Output bytes kept for a tool result: the newest `max` bytes of everything added (chunks are
 * dropped from the front as whole ones, then cut once), and how many came before them.
 */
export class OutputTail {
  readonly #max: number
  #chunks: Uint8Array[] = []
  #kept = 0
  #seen = 0

  constructor(max: number) {
    this.#max = max
  }

  add(bytes: Uint8Array): void {
    this.#chunks.push(bytes)
    this.#kept += bytes.length
    this.#seen += bytes.length
    while (this.#chunks.length > 1 && this.#kept - this.#chunks[0]!.length >= this.#max) this.#kept -= this.#chunks.shift()!.length
  }

  get seenBytes(): number {
    return this.#seen
  }

  /** The kept bytes as plain text, and how many bytes before them are not in it. */
  text(): { text: string; omittedBytes: number } {
    const all = new Uint8Array(this.#kept)
    let at = 0
    for (const chunk of this.#chunks) {
      all.set(chunk, at)
      at += chunk.length
    }
    const cut = Math.max(0, all.length - this.#max)
    // A cut inside a UTF-8 sequence leaves replacement characters at the start: drop them.
    const decoded = new TextDecoder('utf-8', { ignoreBOM: true }).decode(all.subarray(cut)).replace(cut > 0 ? /^\ufffd+/ : /^$/, '')
    return { text: plainText(decoded), omittedBytes: this.#seen - this.#kept + cut }
  }
}

/** The projection's text: the viewport (or the history tail and the viewport), trailing blank
 * lines removed, and the facts an agent needs besides it. */
export function screenText(screen: ScreenProjection, history: boolean): { text: string; meta: Record<string, unknown> } {
  const lines = history ? screen.lines : screen.lines.slice(screen.viewportStart)
  let end = lines.length
  while (end > 0 && lines[end - 1] === '') end--
  const { lines: _, ...meta } = screen
  return { text: lines.slice(0, end).join('\n'), meta }
}

/** The screen text a pattern is matched against: all lines, at most `max` characters from the end. */
export function matchText(screen: ScreenProjection, max: number): string {
  const text = screen.lines.join('\n')
  return text.length > max ? text.slice(text.length - max) : text
}
