/**
 * `termkeep attach <session> <terminal>`: the tmux-attach feel over HTTP. The local terminal goes
 * into raw mode and onto its alternate screen; the remote screen (follow snapshot) is drawn, then
 * output streams to stdout; keystrokes go to the input route in order; window-size changes
 * (SIGWINCH) go to the resize route. Ctrl-\ detaches: the follow is dropped, the remote terminal
 * keeps running, and the local terminal is restored exactly as it was. Network losses resume with
 * Last-Event-ID (nothing lost, nothing printed twice); queries in replayed bytes are removed before
 * they reach this terminal, so it does not answer them into the remote shell.
 */
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { ApiError, type TermkeepClient } from '../web/client/api.ts'
import { follow, type FollowEnd } from '../web/client/follow.ts'
import { InputQueue } from '../web/client/input.ts'
import { stripQueries } from '../web/client/queries.ts'
import { describeRemoteError, REMOTE_OPTIONS, remoteClient } from './remote.ts'
import { UsageError } from './token.ts'

/** Ctrl-\ (FS): the detach key. It is never sent to the remote terminal. */
export const DETACH_BYTE = 0x1c
const DETACH_SIGNALS = ['SIGTERM', 'SIGHUP'] as const
const ENTER_SCREEN = '\x1b[?1049h\x1b[H\x1b[2J'
const LEAVE_SCREEN = '\x1b[0m\x1b[?25h\x1b[?1049l'

export async function attachCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args, allowPositionals: true, options: REMOTE_OPTIONS })
  if (positionals.length !== 2) throw new UsageError('termkeep: usage: termkeep attach <session> <terminal>   (Ctrl-\\ detaches)')
  const [sessionId, terminalId] = positionals
  const client = remoteClient(values)
  // Fail fast, before touching the local terminal, when the server or the terminal is not there.
  const info = await client.terminal(sessionId, terminalId)
  if (info.state === 'closed' || info.state === 'retired') {
    process.stderr.write(`termkeep: terminal ${terminalId} is ${info.state}; \`termkeep display ${sessionId} ${terminalId}\` prints its last screen\n`)
    return 1
  }
  return new Attachment(client, sessionId, terminalId).run()
}

class Attachment {
  readonly #attachment = `cli-${randomBytes(6).toString('hex')}`
  readonly #abort = new AbortController()
  readonly #stdin = process.stdin
  readonly #stdout = process.stdout
  readonly #inputs = new InputQueue(
    (bytes) => this.client.input(this.sessionId, this.terminalId, this.#attachment, bytes),
    (error) => {
      if (error instanceof ApiError && error.code === 'terminal/control-unavailable') {
        this.#inputError = 'termkeep: another client took control of this terminal; input is no longer sent'
      } else if (!this.#abort.signal.aborted) {
        this.#inputError = describeRemoteError(error) ?? String(error)
      }
    },
  )
  #controller = false
  #detached = false
  #inputError: string | undefined

  constructor(
    private readonly client: TermkeepClient,
    private readonly sessionId: string,
    private readonly terminalId: string,
  ) {}

  async run(): Promise<number> {
    const tty = this.#stdin.isTTY === true
    const onData = (chunk: Buffer) => this.#onInput(chunk)
    const onResize = () => void this.#resize()
    if (tty) this.#stdin.setRawMode(true)
    this.#stdin.on('data', onData)
    this.#stdin.resume()
    process.on('SIGWINCH', onResize)
    // Signals that would end this process detach first, so the local terminal is restored.
    const onSignal = () => this.#abort.abort()
    for (const signal of DETACH_SIGNALS) process.on(signal, onSignal)
    this.#stdout.write(ENTER_SCREEN)
    let end: FollowEnd
    try {
      end = await follow({
        client: this.client,
        sessionId: this.sessionId,
        terminalId: this.terminalId,
        attachment: this.#attachment,
        signal: this.#abort.signal,
        handlers: {
          snapshot: (_sequence, screen, info) => {
            this.#controller = info.controllerId === this.#attachment
            this.#stdout.write('\x1b[H\x1b[2J\x1b[3J')
            this.#stdout.write(stripQueries(new TextEncoder().encode(screen)))
            void this.#resize()
          },
          // Replayed queries would be answered by this terminal and typed into the remote shell.
          output: (_sequence, bytes, backlog) => void this.#stdout.write(backlog ? stripQueries(bytes) : bytes),
          state: (info) => {
            this.#controller = info.controllerId === this.#attachment
          },
        },
      })
    } finally {
      process.off('SIGWINCH', onResize)
      for (const signal of DETACH_SIGNALS) process.off(signal, onSignal)
      this.#stdin.off('data', onData)
      if (tty) this.#stdin.setRawMode(false)
      this.#stdin.pause()
      this.#stdout.write(LEAVE_SCREEN)
    }
    return this.#report(end)
  }

  #report(end: FollowEnd): number {
    const where = `${this.sessionId}/${this.terminalId}`
    if (this.#inputError) process.stderr.write(`${this.#inputError}\n`)
    if (end.kind === 'aborted' || this.#detached) {
      process.stderr.write(`[detached from ${where}; it keeps running]\n`)
      return 0
    }
    if (end.kind === 'ended') {
      const state = end.info ? ` (${end.info.state}${end.info.exitCode !== null && end.info.exitCode !== undefined ? `, exit code ${end.info.exitCode}` : ''})` : ''
      process.stderr.write(`[terminal ${where} ended${state}]\n`)
      return 0
    }
    process.stderr.write(`${describeRemoteError(end.error) ?? end.error.message}\n`)
    return 1
  }

  #onInput(chunk: Buffer): void {
    const at = chunk.indexOf(DETACH_BYTE)
    const bytes = at === -1 ? chunk : chunk.subarray(0, at)
    this.#inputs.push(bytes)
    if (at !== -1) {
      this.#detached = true
      // Input already queued is delivered before the follow (and so control) is released.
      void this.#inputs.drained().then(() => this.#abort.abort())
    }
  }

  async #resize(): Promise<void> {
    const { columns, rows } = this.#stdout
    if (!this.#controller || !columns || !rows) return
    try {
      await this.client.resize(this.sessionId, this.terminalId, this.#attachment, columns, rows)
    } catch (error) {
      if (!(error instanceof ApiError)) throw error
    }
  }
}
