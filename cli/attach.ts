/**
 * `termkeep attach <session> <terminal>`: the tmux-attach feel over HTTP. The local terminal goes
 * into raw mode and onto its alternate screen; the remote screen (follow snapshot) is drawn, then
 * output streams to stdout; keystrokes go to the input route in order; window-size changes
 * (SIGWINCH) go to the resize route. Ctrl-\ detaches: the follow is dropped, the remote terminal
 * keeps running, and the local terminal is restored exactly as it was. Network losses resume with
 * Last-Event-ID (nothing lost, nothing printed twice); queries in replayed bytes are removed before
 * they reach this terminal, so it does not answer them into the remote shell.
 *
 * Keystrokes are never typed twice and not lost to a network blip or a stalled server: each batch
 * carries an Idempotency-Key and is retried while its outcome is unknown (web/client/input.ts),
 * waiting while control is being confirmed; after UNKNOWN_OUTCOME_RETRY_MS without an answer the
 * user is told on leaving how many bytes may not have arrived.
 *
 * Control: a follow stream makes its attachment the controller, and only the controller's input is
 * accepted. Keys typed before a snapshot or state frame confirms control (at start, while
 * reconnecting, while re-taking control) are held and sent in order once it does; keys typed while
 * another client has control are dropped, with a notice in the window title. When control becomes
 * free again, attach follows anew with the same attachment id, which makes it the controller.
 */
import { randomBytes } from 'node:crypto'
import { parseArgs } from 'node:util'
import { UNKNOWN_OUTCOME_RETRY_MS } from '../schema/limits.ts'
import { CLI_MAX_HELD_INPUT_BYTES, CLI_RECONNECT_GIVE_UP_MS } from './tuning.ts'
import type { TerminalInfo } from '../schema/wire/terminals.ts'
import { ApiError, type TermkeepClient } from '../web/client/api.ts'
import { follow, type FollowEnd } from '../web/client/follow.ts'
import { InputQueue, type InputFailure } from '../web/client/input.ts'
import { stripQueries } from '../web/client/queries.ts'
import { LocalScreen } from './local-screen.ts'
import { describeRemoteError, REMOTE_OPTIONS, REMOTE_USAGE, remoteClient, remoteErrorLine, seconds } from './remote.ts'
import { resolveTarget, TARGET_USAGE, targetOf } from './target.ts'
import { HELP_OPTION, printedHelp } from './usage.ts'
import { self } from './self.ts'

/** Ctrl-\ (FS): the detach key. It is never sent to the remote terminal. */
export const DETACH_BYTE = 0x1c
const DETACH_SIGNALS = ['SIGTERM', 'SIGHUP'] as const
/** Exit code when the remote process was killed by a signal: 128 + signal, as shells report it. */
const SIGNAL_EXIT_BASE = 128

const USAGE = `usage: termkeep attach <session> <terminal> [--reconnect-timeout SECS]

  Makes this terminal that remote terminal until Ctrl-\\ detaches (the remote one keeps running).
  Ends with the remote shell's exit code when it exits.

  --reconnect-timeout SECS  give up after this long without the server (default ${CLI_RECONNECT_GIVE_UP_MS / 1000})
${TARGET_USAGE}
${REMOTE_USAGE}`

export async function attachCommand(args: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    allowPositionals: true,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, 'reconnect-timeout': { type: 'string' } },
  })
  if (printedHelp(values, USAGE)) return 0
  const target = targetOf(positionals, 'attach', true)
  const giveUpMs = seconds(values['reconnect-timeout'], '--reconnect-timeout', CLI_RECONNECT_GIVE_UP_MS)
  const client = remoteClient(values)
  const { sessionId, terminalId } = await resolveTarget(client, target)
  // Fail fast, before touching the local terminal, when the server or the terminal is not there.
  const info = await client.terminal(sessionId, terminalId)
  if (info.state !== 'starting' && info.state !== 'running') {
    process.stderr.write(
      `termkeep: terminal ${sessionId}/${terminalId} ${ended(info)}; \`${self()} display ${sessionId} ${terminalId}\` prints its last screen\n`,
    )
    return 1
  }
  return attachTo(client, sessionId, terminalId, giveUpMs)
}

/** Attaches this terminal to a live remote terminal until detach or its end (exit code). */
export function attachTo(
  client: TermkeepClient,
  sessionId: string,
  terminalId: string,
  giveUpMs = CLI_RECONNECT_GIVE_UP_MS,
): Promise<number> {
  return new Attachment(client, sessionId, terminalId, giveUpMs).run()
}

/** "has exited (exit code 3)", "is closed", … */
function ended(info: TerminalInfo): string {
  if (info.state !== 'exited') return `is ${info.state}`
  const code = info.exitCode !== null ? `exit code ${info.exitCode}` : info.exitSignal !== null ? `signal ${info.exitSignal}` : undefined
  return `has exited${code ? ` (${code})` : ''}`
}

/** Whether this attachment's input reaches the remote terminal. */
type Control = 'confirming' | 'controller' | 'read-only'

class Attachment {
  readonly #attachment = `cli-${randomBytes(6).toString('hex')}`
  /** Ends the whole attach (detach, signal, giving up). */
  readonly #abort = new AbortController()
  readonly #stdin = process.stdin
  readonly #stdout = process.stdout
  readonly #screen = new LocalScreen(process.stdout)
  readonly #inputs = new InputQueue(
    (bytes, key) => this.client.input(this.sessionId, this.terminalId, this.#attachment, bytes, key),
    (failure) => this.#inputFailed(failure),
    { signal: this.#abort.signal },
  )
  #control: Control = 'confirming'
  #held: Uint8Array[] = []
  #heldBytes = 0
  /** Input that could not be sent: beyond CLI_MAX_HELD_INPUT_BYTES, or typed while read-only. */
  #droppedBytes = 0
  /** Ends the current follow so that a new one re-takes control. */
  #round: AbortController | undefined
  #retake = false
  #detached = false
  #gaveUp = false
  #giveUpTimer: ReturnType<typeof setTimeout> | undefined
  #reconnecting = false
  #inputError: string | undefined

  constructor(
    private readonly client: TermkeepClient,
    private readonly sessionId: string,
    private readonly terminalId: string,
    private readonly giveUpMs: number,
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
    this.#screen.enter()
    let end: FollowEnd
    try {
      end = await this.#follow()
    } finally {
      clearTimeout(this.#giveUpTimer)
      process.off('SIGWINCH', onResize)
      for (const signal of DETACH_SIGNALS) process.off(signal, onSignal)
      this.#stdin.off('data', onData)
      if (tty) this.#stdin.setRawMode(false)
      this.#stdin.pause()
      await this.#screen.leave()
    }
    return this.#report(end)
  }

  /** Follows until the terminal ends or the attach does; a new round re-takes control. */
  async #follow(): Promise<FollowEnd> {
    for (;;) {
      const round = (this.#round = new AbortController())
      const stop = () => round.abort()
      this.#abort.signal.addEventListener('abort', stop, { once: true })
      if (this.#abort.signal.aborted) round.abort()
      this.#retake = false
      try {
        const end = await follow({
          client: this.client,
          sessionId: this.sessionId,
          terminalId: this.terminalId,
          attachment: this.#attachment,
          signal: round.signal,
          handlers: {
            snapshot: (_sequence, screen, info) => {
              this.#screen.reset(stripQueries(new TextEncoder().encode(screen)), info.cols, info.rows)
              this.#onInfo(info)
            },
            // Replayed queries would be answered by this terminal and typed into the remote shell.
            output: (_sequence, bytes, backlog) => this.#screen.write(backlog ? stripQueries(bytes) : bytes),
            state: (info) => {
              this.#screen.resize(info.cols, info.rows)
              this.#onInfo(info)
            },
            status: (status) => this.#onStatus(status),
          },
        })
        if (!(end.kind === 'aborted' && this.#retake && !this.#abort.signal.aborted)) return end
      } finally {
        this.#abort.signal.removeEventListener('abort', stop)
      }
    }
  }

  #onInfo(info: TerminalInfo): void {
    if (info.controllerId === this.#attachment) this.#setControl('controller')
    else if (info.controllerId !== null) this.#setControl('read-only')
    else if (info.state === 'starting' || info.state === 'running') {
      // Control is free (its holder left): following anew makes this attachment the newest one.
      this.#setControl('confirming')
      this.#retake = true
      this.#round?.abort()
    }
  }

  #onStatus(status: 'connecting' | 'live' | 'reconnecting'): void {
    if (status === 'live') {
      clearTimeout(this.#giveUpTimer)
      this.#giveUpTimer = undefined
      this.#reconnecting = false
    } else {
      // Input waits for the new stream's state frame to confirm control again.
      if (this.#control === 'controller') this.#setControl('confirming')
      this.#reconnecting = status === 'reconnecting'
      this.#giveUpTimer ??= setTimeout(() => {
        this.#gaveUp = true
        this.#abort.abort()
      }, this.giveUpMs)
    }
    this.#showNotice()
  }

  #setControl(control: Control): void {
    const was = this.#control
    this.#control = control
    // A retried batch waits while control is unconfirmed (it could only be refused as read-only);
    // read-only lets it go, so that it is answered (typed already, or refused) rather than kept.
    if (control === 'confirming') this.#inputs.hold()
    else this.#inputs.resume()
    if (control === 'controller' && was !== 'controller') {
      for (const bytes of this.#held.splice(0)) this.#inputs.push(bytes)
      this.#heldBytes = 0
      void this.#resize()
    }
    if (control === 'read-only') {
      this.#droppedBytes += this.#heldBytes
      this.#held = []
      this.#heldBytes = 0
    }
    this.#showNotice()
  }

  #showNotice(): void {
    if (this.#reconnecting) this.#screen.notice('reconnecting… (input waits)')
    else if (this.#control === 'read-only') this.#screen.notice('read-only: another client has control; keys are not sent')
    else this.#screen.notice(undefined)
  }

  #report(end: FollowEnd): number {
    const where = `${this.sessionId}/${this.terminalId}`
    if (this.#inputError) process.stderr.write(`${this.#inputError}\n`)
    if (this.#droppedBytes > 0)
      process.stderr.write(
        `termkeep: ${this.#droppedBytes} byte(s) of input were not sent: this attachment did not have control when they were typed\n`,
      )
    if (this.#gaveUp) {
      process.stderr.write(
        `termkeep: lost the connection to ${this.client.url}; gave up after ${this.giveUpMs / 1000} s (${where} keeps running)\n`,
      )
      return 1
    }
    if (end.kind === 'aborted' || this.#detached) {
      process.stderr.write(`[detached from ${where}; it keeps running]\n`)
      return 0
    }
    if (end.kind === 'ended') {
      const state = end.info
        ? ` (${end.info.state}${end.info.exitCode !== null ? `, exit code ${end.info.exitCode}` : ''}${end.info.exitSignal !== null ? `, signal ${end.info.exitSignal}` : ''})`
        : ''
      process.stderr.write(`[terminal ${where} ended${state}]\n`)
      // As ssh does: the remote shell's exit code is this command's.
      if (end.info?.exitCode != null) return end.info.exitCode
      if (end.info?.exitSignal != null) return SIGNAL_EXIT_BASE + end.info.exitSignal
      return 0
    }
    process.stderr.write(`${describeRemoteError(end.error) ?? end.error.message}\n`)
    return 1
  }

  #inputFailed({ error, bytes, uncertain }: InputFailure): void {
    if (error instanceof ApiError && error.code === 'terminal/control-unavailable') {
      this.#droppedBytes += bytes
      this.#setControl('read-only')
    } else if (!this.#abort.signal.aborted) {
      const why = remoteErrorLine(error)
      this.#inputError = uncertain
        ? `${why}\ntermkeep: ${bytes} byte(s) of input may not have arrived: their outcome was still unknown after ${UNKNOWN_OUTCOME_RETRY_MS / 1000} s of retrying`
        : `${why}\ntermkeep: ${bytes} byte(s) of input were not sent`
    }
  }

  #onInput(chunk: Buffer): void {
    if (this.#detached) {
      // Leaving: nothing more is sent; Ctrl-\ again leaves without waiting for queued input.
      if (chunk.includes(DETACH_BYTE)) this.#abort.abort()
      return
    }
    const at = chunk.indexOf(DETACH_BYTE)
    const bytes = at === -1 ? chunk : chunk.subarray(0, at)
    if (this.#control === 'controller') this.#inputs.push(bytes)
    else if (this.#control === 'confirming') this.#hold(bytes)
    else this.#droppedBytes += bytes.length
    if (at !== -1) {
      this.#detached = true
      // Input already queued is delivered before the follow (and so control) is released; input
      // still held waiting for control is not worth keeping the user from leaving.
      void this.#inputs.drained().then(() => this.#abort.abort())
    }
  }

  #hold(bytes: Uint8Array): void {
    const kept = bytes.subarray(0, Math.max(0, CLI_MAX_HELD_INPUT_BYTES - this.#heldBytes))
    this.#droppedBytes += bytes.length - kept.length
    if (kept.length === 0) return
    this.#held.push(Uint8Array.from(kept))
    this.#heldBytes += kept.length
  }

  async #resize(): Promise<void> {
    const { columns, rows } = this.#stdout
    if (this.#control !== 'controller' || !columns || !rows) return
    try {
      await this.client.resize(this.sessionId, this.terminalId, this.#attachment, columns, rows)
    } catch (error) {
      // Refused or lost on the way: the next confirmation of control or SIGWINCH sends it again.
      if (describeRemoteError(error) === undefined) throw error
    }
  }
}
