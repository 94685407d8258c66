/**
 * Commands on the page, as VS Code shows them (docs/commands.md): each command's line gets a mark
 * in the left edge — green when it exited 0, red otherwise — and the view can jump to the previous
 * or next command. The marks come from the shell integration's OSC 133 sequences in the output
 * xterm.js parses (it draws none of them): the prompt's input start (B) marks the command's line,
 * the end (D) says how it exited. Only marks carrying the terminal's nonce count (the follow's
 * snapshot gives it; the follower reads the output, which carries it anyway), so a program that
 * prints marks draws nothing. A snapshot carries no marks: commands from before the page attached
 * are not marked.
 */
import type { IDecoration, IDisposable, IMarker, Terminal } from '@xterm/xterm'

export interface MarkedCommand {
  marker: IMarker
  exitCode: number | null
  command: string
  decoration: IDecoration | undefined
}

/** Pure: the kind of an OSC 133 payload, its exit code, and whether it carries `nonce`. */
export function readMark(data: string, nonce: string | undefined): { kind: string; exitCode: number | null; ours: boolean } {
  const [kind = '', ...fields] = data.split(';')
  const ours = nonce !== undefined && fields.includes(`tk=${nonce}`)
  const exit = fields[0]
  return { kind, exitCode: exit !== undefined && /^-?\d{1,10}$/.test(exit) ? Number(exit) : null, ours }
}

/** Pure: VS Code's escaping of a 633 E command line undone (`\\` → `\`, `\xNN` → the byte). */
function unescapeLine(value: string): string {
  return value.replace(/\\(\\|x([0-9a-fA-F]{2}))/g, (_, c: string, hex?: string) =>
    hex ? String.fromCharCode(Number.parseInt(hex, 16)) : c,
  )
}

export class CommandMarks {
  readonly commands: MarkedCommand[] = []
  readonly #term: Terminal
  readonly #handlers: IDisposable[]
  readonly #changed: () => void
  #nonce: string | undefined
  /** The line the newest prompt's input started on. */
  #input: IMarker | undefined
  #line = ''
  #running: MarkedCommand | undefined

  constructor(term: Terminal, changed: () => void = () => {}) {
    this.#term = term
    this.#changed = changed
    this.#handlers = [
      term.parser.registerOscHandler(133, (data) => this.#mark(data)),
      term.parser.registerOscHandler(633, (data) => this.#vscode(data)),
    ]
  }

  /** The terminal's nonce (from the follow's snapshot); undefined: nothing is marked. */
  set nonce(nonce: string | undefined) {
    this.#nonce = nonce
  }

  /** Scrolls to the nearest command above (`-1`) or below (`1`) the top of the view; false: none. */
  jump(direction: -1 | 1): boolean {
    const top = this.#term.buffer.active.viewportY
    const lines = this.commands.map((c) => c.marker.line).filter((line) => line >= 0)
    const target = direction < 0 ? lines.filter((line) => line < top).at(-1) : lines.find((line) => line > top)
    if (target === undefined) {
      if (direction > 0) this.#term.scrollToBottom()
      return false
    }
    this.#term.scrollToLine(target)
    return true
  }

  dispose(): void {
    for (const handler of this.#handlers) handler.dispose()
    for (const command of this.commands) command.decoration?.dispose()
  }

  #mark(data: string): boolean {
    const { kind, exitCode, ours } = readMark(data, this.#nonce)
    if (!ours) return true
    if (kind === 'B') {
      this.#input?.dispose()
      this.#input = this.#term.registerMarker(0)
    } else if (kind === 'C' && this.#input) {
      this.#running = { marker: this.#input, exitCode: null, command: this.#line, decoration: undefined }
      this.#input = undefined
      this.#line = ''
    } else if (kind === 'D' && this.#running) {
      this.#ended(this.#running, exitCode)
      this.#running = undefined
    }
    return true
  }

  /** VS Code's command line mark (`E;line;nonce`): kept for the mark's tooltip. */
  #vscode(data: string): boolean {
    const [kind, line, nonce] = data.split(';')
    if (kind === 'E' && nonce !== undefined && nonce === this.#nonce && line !== undefined) this.#line = unescapeLine(line)
    return true
  }

  #ended(command: MarkedCommand, exitCode: number | null): void {
    command.exitCode = exitCode
    const ok = exitCode === 0
    command.decoration = this.#term.registerDecoration({ marker: command.marker, x: 0, width: 1, layer: 'top' })
    command.decoration?.onRender((element) => {
      element.classList.add('command-mark', ok ? 'command-ok' : 'command-failed')
      element.title = `${command.command || 'command'}: ${exitCode === null ? 'ended' : `exit ${exitCode}`}`
    })
    this.commands.push(command)
    command.marker.onDispose(() => {
      const at = this.commands.indexOf(command)
      if (at >= 0) this.commands.splice(at, 1)
    })
    this.#changed()
  }
}
