/**
 * The local terminal during `termkeep attach`: entered and left exactly once, with the remote
 * screen drawn in between, and a one-line notice (lost control, reconnecting) in the window title.
 *
 * The local terminal stays on its own alternate screen the whole time (see alt-screen.ts), so the
 * user's screen comes back on detach whatever the remote program did. In place of a remote switch:
 * entering clears the screen (xterm.js starts an alternate screen blank, the cursor where it was);
 * leaving repaints the screen the remote program returns to. That screen is not in the local
 * terminal any more (the remote program drew over it), so a headless xterm.js fed the same remote
 * bytes keeps it, the way the sidecar's emulator does; quitting `less` shows the shell lines that
 * were there before. Just clearing would be simpler but leaves a blank screen with a prompt in the
 * middle; the emulator costs one more parse of the output, which the sidecar already does per
 * terminal. Writes go through one queue, so the local terminal sees every piece in order and a
 * repaint reflects exactly the bytes before it.
 */
import serializeModule from '@xterm/addon-serialize'
import headless from '@xterm/headless'
import { cursorRestoreSuffix } from '../common/xterm/snapshot-suffix.ts'
import { useUnicode11 } from '../common/xterm/widths.ts'
import { AltScreenFilter, type Piece } from './alt-screen.ts'

const { Terminal } = headless
const { SerializeAddon } = serializeModule

/** Push the window title (restored on leave), switch to the alternate screen, clear it. */
const ENTER = '\x1b[22;0t\x1b[?1049h\x1b[H\x1b[2J'
/**
 * Everything a remote program may have turned on, back to the defaults, then the user's screen and
 * title back: SGR, cursor visible, mouse tracking and its encodings, focus events, bracketed
 * paste, application cursor keys and keypad, scroll region, autowrap, character set (G0, SI).
 */
export const LEAVE =
  '\x1b[0m\x1b[?25h' +
  '\x1b[?1000l\x1b[?1002l\x1b[?1003l\x1b[?1005l\x1b[?1006l\x1b[?1015l\x1b[?1004l\x1b[?2004l' +
  '\x1b[?1l\x1b>\x1b[r\x1b[?7h\x1b(B\x0f' +
  '\x1b[?1049l\x1b[23;0t'
const CLEAR = '\x1b[H\x1b[2J\x1b[3J'

export class LocalScreen {
  readonly #emulator = new Terminal({ cols: 80, rows: 24, scrollback: 0, allowProposedApi: true })
  readonly #serializer = new SerializeAddon()
  #filter = new AltScreenFilter()
  #queue: Promise<void> = Promise.resolve()
  /** The remote program's window title, once it set one. */
  #title: string | undefined
  #notice: string | undefined
  #failure: unknown

  constructor(private readonly out: NodeJS.WritableStream) {
    this.#emulator.loadAddon(this.#serializer)
    useUnicode11(this.#emulator) // widths as the sidecar and the page measure them
    this.#emulator.onTitleChange((title) => (this.#title = title))
  }

  enter(): void {
    this.out.write(ENTER)
  }

  /** After everything queued was written: the local terminal as it was before `enter`. */
  async leave(): Promise<void> {
    await this.#queue
    this.#emulator.dispose()
    this.out.write(LEAVE)
    if (this.#failure) throw this.#failure
  }

  /** A fresh remote screen (a follow snapshot) replaces whatever is shown. */
  reset(screen: Uint8Array, cols: number, rows: number): void {
    // Pieces are cut when bytes arrive, so the filter starts afresh now, not when the queue gets here.
    this.#filter = new AltScreenFilter()
    this.#enqueue(async () => {
      this.#emulator.reset()
      this.#emulator.resize(cols, rows)
      this.out.write(CLEAR)
    })
    this.write(screen)
  }

  write(bytes: Uint8Array): void {
    for (const piece of this.#filter.push(bytes)) this.#enqueue(() => this.#apply(piece))
  }

  /** The remote geometry changed at this point of the output. */
  resize(cols: number, rows: number): void {
    this.#enqueue(async () => {
      if (cols !== this.#emulator.cols || rows !== this.#emulator.rows) this.#emulator.resize(cols, rows)
    })
  }

  /** Shows `text` in the window title until it is replaced or cleared (undefined). */
  notice(text: string | undefined): void {
    if (text === this.#notice) return
    this.#notice = text
    // Without a title from the remote program, the user's own (pushed by ENTER) comes back.
    const title = text !== undefined ? `\x1b]2;termkeep: ${text}\x07` : undefined
    this.#enqueue(async () => {
      this.out.write(title ?? (this.#title === undefined ? '\x1b[23;0t\x1b[22;0t' : `\x1b]2;${this.#title}\x07`))
    })
  }

  async #apply(piece: Piece): Promise<void> {
    await new Promise<void>((resolve) => this.#emulator.write(piece.raw, resolve))
    this.out.write(piece.local)
    if (piece.switched === 'enter') this.out.write('\x1b[2J')
    if (piece.switched === 'leave') this.out.write(this.#repaint())
  }

  /** The emulator's (normal) screen, drawn over the local one, cursor included. */
  #repaint(): string {
    const screen = this.#serializer.serialize({ scrollback: 0, excludeModes: true, excludeAltBuffer: true })
    // Margins are global on most terminals: the region an alternate-screen program left must not
    // clip the repaint (the suffix sets the normal screen's own region again, if it has one).
    return `\x1b[0m\x1b[r${CLEAR}${screen}\x1b[0m${cursorRestoreSuffix(this.#emulator)}`
  }

  #enqueue(step: () => Promise<void>): void {
    // A failed step is a bug: reported by leave(), after the local terminal was restored.
    this.#queue = this.#queue.then(step).catch((error: unknown) => void (this.#failure ??= error))
  }
}
