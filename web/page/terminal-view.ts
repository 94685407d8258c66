/**
 * One terminal on the page: xterm.js fed by follow (snapshot, then output), keystrokes and pastes
 * sent to the input route (in order, each batch typed once: retried under its Idempotency-Key while
 * its outcome is unknown, web/client/input.ts), the window size sent to the resize route. When the live terminal is gone
 * (retired: 410, sidecar down: 503, or closed) it shows the last persisted display, read-only,
 * staged off-screen and swapped in only when the transfer reached `end`.
 *
 * Replayed bytes (the snapshot, and the backlog replayed after a reconnect) may contain terminal
 * queries (device attributes, cursor position reports); the ReplayGuard keeps xterm.js from
 * answering those, so a replayed query never types into the shell, while live queries are answered
 * and the user's own typing is never dropped.
 */
import { FitAddon } from '@xterm/addon-fit'
import { Terminal, type ITheme } from '@xterm/xterm'
import { useUnicode11 } from '../../sidecar/emulator/widths.ts'
import { MAX_COLS, MAX_ROWS, MAX_VISIBLE_CELLS, MIN_COLS, MIN_ROWS, UNKNOWN_OUTCOME_RETRY_MS } from '../../schema/limits.ts'
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { ApiError, type TermkeepClient } from '../client/api.ts'
import { replayAnsi } from '../../api/display/replay.ts'
import { readDisplay } from '../client/display.ts'
import { follow, type FollowEnd } from '../client/follow.ts'
import { InputQueue, type InputFailure } from '../client/input.ts'
import { CommandMarks } from './command-marks.ts'
import { h, randomId } from './dom.ts'
import { ReplayGuard } from './replay-guard.ts'

/** Window resizes are sent once they settle, not for every animation frame of a drag. */
const RESIZE_DEBOUNCE_MS = 120

export const THEME: ITheme = {
  background: '#101317',
  foreground: '#e6e6e6',
  cursor: '#f5d76e',
  selectionBackground: '#3a4a66',
}

export type ViewMode = 'connecting' | 'live' | 'read-only' | 'reconnecting' | 'display' | 'ended' | 'error'

export interface TerminalViewEvents {
  info(info: TerminalInfo): void
  mode(mode: ViewMode, message: string): void
  /** The user asked to move keyboard focus out of the terminal (it keeps Tab for the shell). */
  leave(): void
}

/** Ctrl+Shift+Home leaves the terminal for keyboard users; shells do not bind it. */
export const isLeaveKey = (e: KeyboardEvent) => e.type === 'keydown' && e.ctrlKey && e.shiftKey && !e.altKey && e.key === 'Home'
/** Ctrl+Shift+Up / Down jump to the previous / next command (as VS Code's Ctrl+Up / Down). */
export const commandJumpOf = (e: KeyboardEvent): -1 | 1 | undefined =>
  e.type === 'keydown' && e.ctrlKey && e.shiftKey && !e.altKey
    ? e.key === 'ArrowUp'
      ? -1
      : e.key === 'ArrowDown'
        ? 1
        : undefined
    : undefined

function newTerminal(readOnly: boolean): Terminal {
  const term = new Terminal({
    theme: THEME,
    fontFamily: 'ui-monospace, "DejaVu Sans Mono", "Liberation Mono", monospace',
    fontSize: 14,
    cursorBlink: !readOnly,
    disableStdin: readOnly,
    scrollback: 10_000,
    // The unicode API (Unicode 11 widths, as the sidecar's emulator measures) is a proposed one.
    allowProposedApi: true,
    screenReaderMode: false,
  })
  useUnicode11(term)
  return term
}

function fitGeometry(cols: number, rows: number): { cols: number; rows: number } {
  cols = Math.min(Math.max(cols, MIN_COLS), MAX_COLS)
  rows = Math.min(Math.max(rows, MIN_ROWS), MAX_ROWS)
  if (cols * rows > MAX_VISIBLE_CELLS) rows = Math.max(MIN_ROWS, Math.floor(MAX_VISIBLE_CELLS / cols))
  return { cols, rows }
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
  /** The commands' marks in this view (web/page/command-marks.ts). */
  readonly marks: CommandMarks
  #commandNav: HTMLElement

  constructor(
    private readonly client: TermkeepClient,
    readonly sessionId: string,
    readonly terminalId: string,
    private readonly events: TerminalViewEvents,
  ) {
    this.#host = h('div', { class: 'xterm-host' })
    const jump = (direction: -1 | 1, label: string, text: string) =>
      h('button', { type: 'button', class: 'small', 'aria-label': label, onclick: () => this.marks.jump(direction) }, text)
    this.#commandNav = h(
      'div',
      { class: 'command-nav', hidden: '' },
      jump(-1, 'Previous command (Ctrl+Shift+Up)', '↑ Command'),
      jump(1, 'Next command (Ctrl+Shift+Down)', '↓ Command'),
    )
    this.element = h('div', { class: 'terminal-view' }, this.#commandNav, this.#host)
    this.term = newTerminal(false)
    this.term.loadAddon(this.#fit)
    this.#guard = new ReplayGuard(this.term)
    this.marks = new CommandMarks(this.term, () => (this.#commandNav.hidden = false))
    this.term.attachCustomKeyEventHandler((event) => {
      const jump = commandJumpOf(event)
      if (jump !== undefined) {
        event.preventDefault()
        this.marks.jump(jump)
        return false
      }
      if (!isLeaveKey(event)) return true
      event.preventDefault()
      this.events.leave()
      return false
    })
    this.term.onData((data) => this.#send(this.#encoder.encode(data)))
    this.term.onBinary((data) => this.#send(Uint8Array.from(data, (c) => c.charCodeAt(0) & 255)))
    this.#observer = new ResizeObserver(() => this.#scheduleResize())
  }

  get mode(): ViewMode {
    return this.#mode
  }

  /** Mounts the terminal (the element must be in the document) and starts following. */
  start(): void {
    this.term.open(this.#host)
    this.#observer.observe(this.#host)
    void this.#follow()
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

  dispose(): void {
    this.#abort.abort()
    this.#disposed.abort()
    this.#observer.disconnect()
    clearTimeout(this.#resizeTimer)
    this.#guard.dispose()
    this.marks.dispose()
    this.term.dispose()
  }

  #setMode(mode: ViewMode, message: string): void {
    this.#mode = mode
    this.element.dataset.mode = mode
    this.events.mode(mode, message)
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
          this.marks.nonce = marks
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
    this.#info = info
    this.#controller = info.controllerId === this.#attachment
    // Control is known again: held input goes (or, read-only, is answered as refused).
    this.#input.resume()
    if (!this.#controller && (this.term.cols !== info.cols || this.term.rows !== info.rows)) this.term.resize(info.cols, info.rows)
    if (this.#mode === 'live' || this.#mode === 'read-only' || this.#mode === 'connecting') {
      this.#setMode(
        this.#controller ? 'live' : 'read-only',
        this.#controller ? '' : 'Another window controls this terminal; this view is read-only.',
      )
    }
    this.events.info(info)
  }

  async #ended(end: FollowEnd): Promise<void> {
    if (end.kind === 'aborted') return
    if (end.kind === 'refused') {
      const { code, message } = end.error
      if (code === 'terminal/unavailable' || code === 'sidecar/unavailable' || code === 'terminal/closed') {
        await this.#showDisplay(code === 'sidecar/unavailable' ? 'The terminal host is not reachable' : 'This terminal is no longer live')
      } else {
        this.#setMode('error', `${message} (${code})`)
      }
      return
    }
    // Every byte up to the end is already on screen: keep it, read-only.
    this.#controller = false
    this.term.options.disableStdin = true
    this.term.options.cursorBlink = false
    const info = end.info
    const how =
      info?.exitCode !== null && info?.exitCode !== undefined
        ? ` with code ${info.exitCode}`
        : info?.exitSignal
          ? ` on signal ${info.exitSignal}`
          : ''
    this.#setMode(
      'ended',
      `The shell ${info?.state === 'exited' ? 'exited' : 'ended'}${how}. This view is read-only; start a new terminal to continue.`,
    )
  }

  /** Reads the persisted display and swaps it in only once the whole revision has arrived. */
  async #showDisplay(reason: string): Promise<void> {
    this.#controller = false
    this.term.options.disableStdin = true
    try {
      const display = await readDisplay(this.client, this.sessionId, this.terminalId, this.#abort.signal)
      const staged = newTerminal(true)
      const host = h('div', { class: 'xterm-host' })
      staged.resize(display.begin.cols, display.begin.rows)
      staged.write(replayAnsi(display))
      // Swap: the old live view stays on screen until the new one is complete.
      this.#observer.disconnect()
      this.#host.replaceWith(host)
      this.term.dispose()
      this.#host = host
      this.term = staged
      staged.open(host)
      this.#setMode('display', `${reason}; showing its last saved screen (read-only).`)
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

  async #resize(): Promise<void> {
    if (!this.#controller || this.#mode === 'display') return
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
}
