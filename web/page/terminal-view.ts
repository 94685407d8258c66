/**
 * One terminal on the page: xterm.js fed by follow (snapshot, then output), keystrokes and pastes
 * sent to the input route (in order, each batch typed once: retried under its Idempotency-Key while
 * its outcome is unknown, web/client/input.ts). The program's size follows this window only once
 * this window holds control and is used (./sizing.ts); otherwise the terminal is shown at its own
 * size, scaled to fit. When the live terminal is gone (retired: 410, sidecar down: 503, or closed)
 * it shows the last persisted display, read-only, staged off-screen and swapped in only when the
 * transfer reached `end`; a terminal already known to be closed or retired goes there at once.
 *
 * Replayed bytes (the snapshot, and the backlog replayed after a reconnect) may contain terminal
 * queries (device attributes, cursor position reports); the ReplayGuard keeps xterm.js from
 * answering those, so a replayed query never types into the shell, while live queries are answered
 * and the user's own typing is never dropped.
 */
import { FitAddon } from '@xterm/addon-fit'
import type { Terminal } from '@xterm/xterm'
import { randomId } from '../../common/crypto.ts'
import { replayAnsi } from '../../common/display/replay.ts'
import { UNKNOWN_OUTCOME_RETRY_MS } from '../../schema/limits.ts'
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { ApiError, type TermkeepClient } from '../client/api.ts'
import { readDisplay } from '../client/display.ts'
import { follow, type FollowEnd } from '../client/follow.ts'
import { InputQueue, type InputFailure } from '../client/input.ts'
import { endedText } from '../client/labels.ts'
import { CommandMarks } from './command-marks.ts'
import { h } from './dom.ts'
import { ReplayGuard } from './replay-guard.ts'
import { BASE_FONT_SIZE, scaleToFit, type SizeMode } from './sizing.ts'
import { TerminalBar } from './terminal-bar.ts'
import { equip } from './terminal-tools.ts'
import { fitGeometry, newTerminal } from './xterm.ts'

/** Window resizes are acted on once they settle, not for every animation frame of a drag. */
const RESIZE_DEBOUNCE_MS = 120

export type ViewMode = 'connecting' | 'live' | 'read-only' | 'reconnecting' | 'display' | 'ended' | 'error'

export interface TerminalViewEvents {
  info(info: TerminalInfo): void
  mode(mode: ViewMode, message: string): void
  /** The user asked to move keyboard focus out of the terminal (it keeps Tab for the shell). */
  leave(): void
}

export interface TerminalViewOptions {
  /** The program's size follows this window from the start (a terminal this window made). */
  fit?: boolean
  /** What the terminal list said about it: a closed or retired one opens on its last screen. */
  info?: TerminalInfo
  /** Whether this window closed it (its end then says so). */
  closedHere?: () => boolean
}

export class TerminalView {
  readonly element: HTMLElement
  term: Terminal
  #fit = new FitAddon()
  #host: HTMLElement
  #attachment = randomId('web')
  #abort = new AbortController()
  #info: TerminalInfo | undefined
  #guard: ReplayGuard
  #controller = false
  /** Whether the program's size follows this window (./sizing.ts). */
  #follows: boolean
  #size: SizeMode | undefined
  /** The commands' marks in this view (web/page/command-marks.ts); none on a last screen. */
  marks: CommandMarks | undefined
  readonly #bar = new TerminalBar(() => this.fitToWindow())
  /** Ends with the view (#abort is replaced when the view takes control again). */
  #disposed = new AbortController()
  #input = new InputQueue(
    (bytes, key) => this.client.input(this.sessionId, this.terminalId, this.#attachment, bytes, key),
    (failure) => this.#inputFailed(failure),
    { signal: this.#disposed.signal },
  )
  #resizeTimer: ReturnType<typeof setTimeout> | undefined
  #observer: ResizeObserver
  #encoder = new TextEncoder()
  #mode: ViewMode = 'connecting'

  constructor(
    private readonly client: TermkeepClient,
    readonly sessionId: string,
    readonly terminalId: string,
    private readonly events: TerminalViewEvents,
    private readonly options: TerminalViewOptions = {},
  ) {
    this.#follows = options.fit === true
    this.#host = h('div', { class: 'xterm-host' })
    this.element = h('div', { class: 'terminal-view' }, this.#bar.element, this.#host)
    this.#bar.find.onClose = () => this.term.focus()
    this.#bar.onJump = (direction) => this.marks?.jump(direction)
    this.term = this.#newTerminal(false, this.#host)
    this.term.loadAddon(this.#fit)
    this.#guard = new ReplayGuard(this.term)
    this.term.onData((data) => this.#send(this.#encoder.encode(data)))
    this.term.onBinary((data) => this.#send(Uint8Array.from(data, (c) => c.charCodeAt(0) & 255)))
    // A key or a paste in this window makes it the one the program's size follows (xterm.js's own
    // answers to a program's queries arrive through onData too, so onData cannot tell).
    this.term.onKey(() => this.#use())
    this.#host.addEventListener('paste', () => this.#use(), { capture: true })
    this.#observer = new ResizeObserver(() => this.#scheduleResize())
  }

  get mode(): ViewMode {
    return this.#mode
  }

  /** Mounts the terminal (the element must be in the document) and starts following, or shows the
   * last screen of a terminal already known to be closed or retired. */
  start(): void {
    this.term.open(this.#host)
    this.#observer.observe(this.#host)
    const known = this.options.info
    if (known && (known.state === 'closed' || known.state === 'retired')) {
      this.#info = known
      void this.#showDisplay(`This terminal ${endedText(known, this.options.closedHere?.())}`)
    } else {
      void this.#follow()
    }
    this.#drawSize()
  }

  focus(): void {
    this.term.focus()
  }

  /** Makes this page the input controller again (a newer attachment elsewhere took it). */
  takeControl(): void {
    this.#abort.abort()
    this.#abort = new AbortController()
    this.#attachment = randomId('web')
    void this.#follow()
  }

  /** An explicit choice: the program's size follows this window from now on. */
  fitToWindow(): void {
    this.#use()
    if (!this.#controller && this.#mode !== 'display' && this.#mode !== 'ended') this.takeControl()
  }

  dispose(): void {
    this.#abort.abort()
    this.#disposed.abort()
    this.#observer.disconnect()
    clearTimeout(this.#resizeTimer)
    this.#guard.dispose()
    this.#bar.find.dispose()
    this.marks?.dispose()
    this.term.dispose()
  }

  #newTerminal(readOnly: boolean, host: HTMLElement): Terminal {
    const term = newTerminal(readOnly)
    const jump = (direction: -1 | 1) => this.marks?.jump(direction)
    this.#bar.find.use(equip(term, host, { find: () => this.#bar.find.open(), leave: () => this.events.leave(), jump }))
    // A live terminal's commands are marked from its output (a last screen's output is not replayed).
    if (!readOnly) this.marks = new CommandMarks(term, () => (this.#bar.commands.hidden = false))
    return term
  }

  #use(): void {
    if (this.#follows) return
    this.#follows = true
    this.#scheduleResize(0)
  }

  #setMode(mode: ViewMode, message: string): void {
    this.#mode = mode
    this.element.dataset.mode = mode
    this.events.mode(mode, message)
    this.#drawSize()
  }

  async #follow(): Promise<void> {
    const signal = this.#abort.signal
    const end = await follow({
      client: this.client,
      sessionId: this.sessionId,
      terminalId: this.terminalId,
      attachment: this.#attachment,
      signal,
      handlers: {
        snapshot: (_sequence, screen, info, marks) => {
          if (this.marks) this.marks.nonce = marks
          this.term.reset()
          if (this.term.cols !== info.cols || this.term.rows !== info.rows) this.term.resize(info.cols, info.rows)
          this.#guard.write(screen, true, () => this.#scheduleResize(0))
          this.#onInfo(info)
        },
        output: (_sequence, bytes, backlog) => {
          this.#guard.write(bytes, backlog)
        },
        state: (info) => this.#onInfo(info),
        status: (status) => {
          if (status === 'reconnecting') {
            // Input typed meanwhile, and a batch being retried, wait for control to be confirmed.
            this.#input.hold()
            this.#setMode('reconnecting', 'Connection lost; reconnecting…')
          } else if (status === 'live') this.#setMode(this.#controller ? 'live' : 'read-only', '')
        },
      },
    })
    if (!signal.aborted) await this.#ended(end)
  }

  #onInfo(info: TerminalInfo): void {
    const resized = this.#info?.cols !== info.cols || this.#info?.rows !== info.rows
    this.#info = info
    this.#controller = info.controllerId === this.#attachment
    // Control is known again: held input goes (or, read-only, is answered as refused).
    this.#input.resume()
    if (!this.#decides() && (this.term.cols !== info.cols || this.term.rows !== info.rows)) this.term.resize(info.cols, info.rows)
    if (this.#mode === 'live' || this.#mode === 'read-only' || this.#mode === 'connecting') {
      this.#setMode(
        this.#controller ? 'live' : 'read-only',
        this.#controller ? '' : 'Another window controls this terminal; this view is read-only.',
      )
    }
    if (resized || !this.#decides()) this.#scheduleResize(0)
    this.#drawSize()
    this.events.info(info)
  }

  /** Whether this window decides the program's size now: it holds control and was used. */
  #decides(): boolean {
    return this.#follows && this.#controller && this.#mode !== 'display' && this.#mode !== 'ended'
  }

  async #ended(end: FollowEnd): Promise<void> {
    if (end.kind === 'aborted') return
    if (end.kind === 'refused') {
      const { code, message } = end.error
      const hostDown = code === 'sidecar/unavailable' || code === 'host/unavailable'
      if (code === 'terminal/unavailable' || hostDown || code === 'terminal/closed') {
        const info = await this.#finalInfo(undefined)
        const reason = hostDown
          ? 'The terminal host is not reachable'
          : info
            ? `This terminal ${endedText(info, this.options.closedHere?.())}`
            : 'This terminal is no longer live'
        await this.#showDisplay(reason)
      } else {
        this.#setMode('error', `${message} (${code})`)
      }
      return
    }
    // Every byte up to the end is already on screen: keep it, read-only.
    this.#controller = false
    this.term.options.disableStdin = true
    this.term.options.cursorBlink = false
    const info = await this.#finalInfo(end.info)
    const how = info ? endedText(info, this.options.closedHere?.()) : 'ended'
    this.#setMode('ended', `This terminal ${how}. Its screen stays here, read-only; start a new terminal to continue.`)
    if (info) this.events.info(info)
  }

  /** The terminal's info once it ended: a close's last steps (closed, retired) may come after the
   * stream ended, so it is asked for once more. */
  async #finalInfo(last: TerminalInfo | undefined): Promise<TerminalInfo | undefined> {
    if (this.#abort.signal.aborted) return last
    try {
      return await this.client.terminal(this.sessionId, this.terminalId)
    } catch {
      return last ?? this.#info
    }
  }

  /** Reads the persisted display and swaps it in only once the whole revision has arrived. */
  async #showDisplay(reason: string): Promise<void> {
    this.#controller = false
    this.term.options.disableStdin = true
    try {
      const display = await readDisplay(this.client, this.sessionId, this.terminalId, this.#abort.signal)
      const host = h('div', { class: 'xterm-host' })
      const staged = this.#newTerminal(true, host)
      staged.resize(display.begin.cols, display.begin.rows)
      staged.write(replayAnsi(display))
      // Swap: the old live view stays on screen until the new one is complete.
      this.#observer.disconnect()
      this.#host.replaceWith(host)
      this.term.dispose()
      this.#host = host
      this.term = staged
      staged.open(host)
      this.#observer = new ResizeObserver(() => this.#scheduleResize())
      this.#observer.observe(host)
      this.#setMode('display', `${reason}. Showing its last saved screen, read-only.`)
    } catch (error) {
      if (this.#abort.signal.aborted) return
      const detail = error instanceof ApiError ? `${error.message} (${error.code})` : String((error as Error).message ?? error)
      this.#setMode('ended', `${reason}; no saved screen to show: ${detail}`)
    }
  }

  #send(bytes: Uint8Array): void {
    if (!this.#controller) return
    this.#input.push(bytes)
  }

  #inputFailed({ error, uncertain }: InputFailure): void {
    if (error instanceof ApiError && error.code === 'terminal/control-unavailable') {
      this.#controller = false
      this.#setMode('read-only', 'Another window controls this terminal; this view is read-only.')
    } else if (uncertain) {
      // Retried under its key for UNKNOWN_OUTCOME_RETRY_MS without an answer: the batch may or
      // may not have arrived, and what was typed after it was dropped; the user is told.
      this.events.mode(
        this.#mode,
        `Connection lost while sending input; some keystrokes may not have arrived (no answer for ${UNKNOWN_OUTCOME_RETRY_MS / 1000} s).`,
      )
    } else if (error instanceof ApiError) {
      this.events.mode(this.#mode, `Input was refused: ${error.message}`)
    } else {
      this.events.mode(this.#mode, `Input was not sent: ${(error as Error)?.message ?? String(error)}`)
    }
  }

  #scheduleResize(delay = RESIZE_DEBOUNCE_MS): void {
    clearTimeout(this.#resizeTimer)
    this.#resizeTimer = setTimeout(() => void this.#resize(), delay)
  }

  /** Fits the program to this window when this window decides its size, else shows it scaled. */
  async #resize(): Promise<void> {
    if (!this.#decides()) {
      this.#sized(await scaleToFit(this.term, this.#host))
      return
    }
    if (this.term.options.fontSize !== BASE_FONT_SIZE) this.term.options.fontSize = BASE_FONT_SIZE
    this.#sized('fit')
    const proposed = this.#fit.proposeDimensions()
    if (!proposed || !Number.isFinite(proposed.cols) || !Number.isFinite(proposed.rows)) return
    const { cols, rows } = fitGeometry(proposed.cols, proposed.rows)
    if (this.#info && this.#info.cols === cols && this.#info.rows === rows && this.term.cols === cols && this.term.rows === rows) return
    this.term.resize(cols, rows)
    try {
      await this.client.resize(this.sessionId, this.terminalId, this.#attachment, cols, rows)
    } catch (error) {
      if (error instanceof ApiError && error.code === 'terminal/control-unavailable')
        this.#inputFailed({ error, bytes: 0, uncertain: false })
    }
  }

  #sized(mode: SizeMode): void {
    this.#size = mode
    this.element.dataset.size = mode
    this.#drawSize()
  }

  /** The bar: read-only or not, the program's size and who decides it. */
  #drawSize(): void {
    this.#bar.show({
      cols: this.#info?.cols ?? this.term.cols,
      rows: this.#info?.rows ?? this.term.rows,
      size: this.#size,
      finished: this.#mode === 'display' || this.#mode === 'ended',
      readOnly: this.#mode === 'read-only',
      canFit: !this.#decides() && (this.#mode === 'live' || this.#mode === 'read-only'),
    })
  }
}
