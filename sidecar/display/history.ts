/**
 * Where the normal buffer's history rows stand in a numbering that does not move: an *epoch*
 * (a token) and, within it, an absolute row number for every row that ever scrolled into
 * history. Rows above the viewport never change until something reflows or replaces the buffer,
 * so a row's absolute number names its content for the whole epoch; incremental revisions store
 * each such row once (sidecar/display/persist.ts).
 *
 * xterm.js keeps history in a ring (CircularList): rows enter at the bottom and are trimmed at
 * the top (the allowance, or ED 3). Counting trims (the ring's `onTrim`, internal) gives row i of
 * the buffer the absolute number `trimmed + i`. A new epoch begins whenever that could be wrong:
 *   - a resize (reflow re-wraps history in place; more rows pull history back into the viewport),
 *   - a full reset (RIS replaces the buffers), or any other replacement of the buffer or its ring,
 *   - the newest row last handed out is no longer the same line object where it was (a safety
 *     net for anything not foreseen: it costs a full history write, never a wrong revision).
 * An emulator's screen keeps most of its history packed above the ring (sidecar/emulator/
 * history-store.ts): a row the ring trims into the store keeps its number, so the history is
 * [trimmed - packed, trimmed + ybase).
 */
import type { IDisposable, Terminal } from '@xterm/headless'
import { HistoryStore } from '../emulator/history-store.ts'

interface Ring {
  readonly length: number
  get(index: number): unknown
  onTrim(listener: (amount: number) => void): IDisposable
}

interface NormalBuffer {
  lines: Ring
  ybase: number
}

function ringBuffer(terminal: Terminal): NormalBuffer {
  const core = (terminal as unknown as { _core?: { buffers?: { normal?: NormalBuffer } } })._core
  const normal = core?.buffers?.normal
  if (!normal?.lines || typeof normal.lines.onTrim !== 'function')
    throw new Error('@xterm/headless internals changed: buffers.normal.lines.onTrim')
  return normal
}

let instances = 0

/** The history located in its epoch: rows [first, end) are the buffer's history rows, oldest first. */
export interface HistoryLocation {
  token: string
  first: number
  end: number
}

export class HistoryPosition {
  readonly #terminal: Terminal
  /** Distinguishes this screen's epochs from any other screen's (a rebuilt one included). */
  readonly #instance = `${process.pid}.${++instances}.${Date.now().toString(36)}`
  #epoch = 0
  #token = ''
  #trimmed = 0
  #buffer: NormalBuffer | undefined
  #ring: Ring | undefined
  #trimListener: IDisposable | undefined
  readonly #resizeListener: IDisposable
  #stale = true
  /** The newest history row handed out, and its line object. */
  #sentinel: { row: number; line: unknown } | undefined

  constructor(terminal: Terminal) {
    this.#terminal = terminal
    this.#resizeListener = terminal.onResize(() => (this.#stale = true))
  }

  /** The current history's location; begins a new epoch when the numbering could have moved. */
  locate(): HistoryLocation {
    const buffer = ringBuffer(this.#terminal)
    if (buffer !== this.#buffer || buffer.lines !== this.#ring) this.#stale = true
    if (!this.#stale && this.#sentinel) {
      const at = this.#sentinel.row - this.#trimmed
      if (at >= 0 && (at >= buffer.ybase || buffer.lines.get(at) !== this.#sentinel.line)) this.#stale = true
    }
    const packed = this.#packed()
    if (this.#stale) this.#begin(buffer, packed)
    return { token: this.#token, first: this.#trimmed - packed, end: this.#trimmed + buffer.ybase }
  }

  #packed(): number {
    return HistoryStore.of(this.#terminal)?.packed ?? 0
  }

  /** Notes the newest row of a revision just encoded (the sentinel for `locate`). */
  handedOut(location: HistoryLocation): void {
    const buffer = ringBuffer(this.#terminal)
    if (location.token !== this.#token || location.end <= location.first || location.end <= this.#trimmed)
      return void (this.#sentinel = undefined)
    this.#sentinel = { row: location.end - 1, line: buffer.lines.get(location.end - 1 - this.#trimmed) }
  }

  /**
   * Continues an epoch that a stored revision belongs to: a screen rebuilt from that revision
   * holds exactly its history rows, the oldest of them at absolute row `first`.
   */
  adopt(token: string, first: number): void {
    this.#begin(ringBuffer(this.#terminal), first + this.#packed(), token)
  }

  #begin(buffer: NormalBuffer, trimmed: number, token?: string): void {
    this.#trimListener?.dispose()
    this.#buffer = buffer
    this.#ring = buffer.lines
    this.#trimmed = trimmed
    this.#trimListener = buffer.lines.onTrim((amount) => (this.#trimmed += amount))
    this.#token = token ?? `${this.#instance}.${++this.#epoch}`
    this.#sentinel = undefined
    this.#stale = false
  }

  dispose(): void {
    this.#trimListener?.dispose()
    this.#resizeListener.dispose()
  }
}
