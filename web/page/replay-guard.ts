/**
 * Keeps xterm.js from answering terminal queries that are only being replayed. A snapshot or a
 * backlog after a reconnect can contain queries (device attributes, status and cursor position
 * reports, mode and setting requests, colour queries) that a program sent long ago; xterm.js would
 * answer each one through `onData`, and the answer would be typed into the shell (the "replayed
 * queries answered twice" bug of terminado and others; VS Code gates input with `_inReplay`).
 *
 * Rather than dropping all input while replay bytes are parsed (which would also drop what the user
 * types meanwhile), the guard swallows the queries themselves while xterm.js parses a chunk that
 * was written as replay: every write goes through `write`, a FIFO records whether each pending
 * chunk is replay, and xterm.js parses chunks in order and calls a chunk's callback right after
 * parsing it, so the head of the FIFO is the chunk being parsed.
 */
import type { IDisposable, Terminal } from '@xterm/xterm'

/** CSI t parameters that ask for a report (window state, position, sizes, title). */
const WINDOW_REPORTS = new Set([11, 13, 14, 15, 16, 18, 19, 20, 21])

export class ReplayGuard {
  readonly #pending: boolean[] = []
  readonly #handlers: IDisposable[]

  constructor(private readonly term: Terminal) {
    const inReplay = () => this.#pending[0] === true
    const parser = term.parser
    const swallow = () => inReplay()
    this.#handlers = [
      parser.registerCsiHandler({ final: 'c' }, swallow), // DA1
      parser.registerCsiHandler({ prefix: '>', final: 'c' }, swallow), // DA2
      parser.registerCsiHandler({ prefix: '=', final: 'c' }, swallow), // DA3
      parser.registerCsiHandler({ final: 'n' }, swallow), // DSR, CPR
      parser.registerCsiHandler({ prefix: '?', final: 'n' }, swallow), // DECDSR
      parser.registerCsiHandler({ intermediates: '$', final: 'p' }, swallow), // DECRQM
      parser.registerCsiHandler({ prefix: '?', intermediates: '$', final: 'p' }, swallow), // DECRQM (private)
      parser.registerCsiHandler({ prefix: '>', final: 'q' }, swallow), // XTVERSION
      parser.registerCsiHandler({ final: 't' }, (params) => inReplay() && WINDOW_REPORTS.has(Number(params[0]))),
      parser.registerDcsHandler({ intermediates: '$', final: 'q' }, swallow), // DECRQSS
      // Colour queries carry "?"; colour changes in the same sequences are kept.
      ...[4, 10, 11, 12, 104].map((ident) => parser.registerOscHandler(ident, (data) => inReplay() && data.includes('?'))),
    ]
  }

  /** Writes bytes; `replay` marks bytes that were already seen by the terminal's programs. */
  write(data: string | Uint8Array, replay: boolean, done?: () => void): void {
    this.#pending.push(replay)
    this.term.write(data, () => {
      this.#pending.shift()
      done?.()
    })
  }

  dispose(): void {
    for (const handler of this.#handlers) handler.dispose()
  }
}
