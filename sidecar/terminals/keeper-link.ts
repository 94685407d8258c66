/**
 * The sidecar's side of its keeper (keeper/): one connection (local/keeper/client.ts), and per
 * terminal a `KeptPty` — what the sidecar's terminal drives (input, resize, close) and hears from
 * (output into its journal, the end of output, the exit, input the program has not read yet).
 *
 * Output arrives as the keeper wrote it: each notification names the records (sequence, spool
 * offset, length) and carries their bytes while the sidecar keeps up, so the journal's readers at
 * the live edge never read the file. A terminal the sidecar adopts (after its own restart) or has
 * just spawned is loaded from the index file as far as the keeper said it wrote: notifications of
 * records before that (sent before the keeper's reply) are for terminals not yet known here, and
 * are skipped; every later one continues the index without a gap.
 */
import { TermkeepError } from '../../schema/errors.ts'
import { MAX_INPUT_BACKLOG_BYTES } from '../../schema/limits.ts'
import type { KeeperClient, Notification } from '../../local/keeper/client.ts'
import type { Records } from '../../local/keeper/frames.ts'
import type {
  KeeperInfo,
  KeptExit,
  KeptIdentity,
  KeptInputKey,
  KeptTerminalState,
  SpawnOptions,
  SweepTarget,
} from '../../local/keeper/protocol.ts'
import { runsAs } from '../../local/proc.ts'
import { Journal } from '../journal/journal.ts'
import { writeFailures } from '../write-retry.ts'
import { hopMark } from '../../common/hop-trace.ts'

/** A request the keeper could not answer: its terminal went with it (the keeper ended, and the
 * terminal is being retired), never a server error. */
function gone(error: Error): never {
  throw new TermkeepError('terminal/unavailable', `the terminal's keeper did not answer: ${error.message}`)
}

/** What a journal failure in the keeper is called in the sidecar's log and health. */
const JOURNALING = "journaling a terminal's output (its program is paused meanwhile)"

export class KeptPty {
  readonly id: number
  readonly sessionId: string
  readonly terminalId: string
  /** The geometry the keeper last applied (adoption: what the terminal has now). */
  readonly cols: number
  readonly rows: number
  readonly pid: number
  readonly ttyIndex: number | undefined
  readonly identity: KeptIdentity | undefined
  readonly journal: Journal
  /** The Idempotency-Keys of input the keeper received (the terminal's memory of them). */
  readonly inputKeys: readonly KeptInputKey[]
  /** The byte source reached EOF (the journal holds everything). */
  ended = false
  exit: KeptExit | null = null
  #onData: () => void = () => {}
  #onEnd: () => void = () => {}
  #onExit: (exit: KeptExit) => void = () => {}
  /** Input the keeper last reported waiting, and input sent since that report. */
  #backlog = 0
  #sentSinceReport = 0
  #failing = false

  constructor(
    private readonly link: KeeperLink,
    state: KeptTerminalState,
  ) {
    this.id = state.id
    this.sessionId = state.sessionId
    this.terminalId = state.terminalId
    this.cols = state.cols
    this.rows = state.rows
    this.pid = state.pid
    this.ttyIndex = state.ttyIndex
    this.identity = state.identity
    this.journal = Journal.adopt(state.journal)
    this.inputKeys = state.inputKeys ?? []
    this.#backlog = state.backlog
    if (state.ended) this.#ended()
    if (state.exit) this.exit = state.exit
    if (state.failing) this.#trouble(true, state.failing.message, state.failing.code)
  }

  /** Output was journaled. */
  onData(listener: () => void): void {
    this.#onData = listener
  }

  /** The byte source closed; called at once when it already did. */
  onEnd(listener: () => void): void {
    this.#onEnd = listener
    if (this.ended) listener()
  }

  /** The program exited; called at once when it already did (while the sidecar was down). */
  onExit(listener: (exit: KeptExit) => void): void {
    this.#onExit = listener
    if (this.exit) listener(this.exit)
  }

  /**
   * Input for the program. While it is not reading (the keeper reported input waiting), more
   * than MAX_INPUT_BACKLOG_BYTES in all is refused: it would only pile up.
   */
  write(bytes: Uint8Array, key?: KeptInputKey): void {
    const waiting = this.#backlog + this.#sentSinceReport + bytes.length
    if (this.#backlog > 0 && waiting > MAX_INPUT_BACKLOG_BYTES) {
      throw new TermkeepError(
        'terminal/input-backlog-full',
        `the program has not read ${this.#backlog} bytes of input yet; this input was not sent`,
        { waiting: this.#backlog, limit: MAX_INPUT_BACKLOG_BYTES },
      )
    }
    this.#sentSinceReport += bytes.length
    hopMark('sidecar: input → keeper')
    this.link.client.write(this.id, bytes, key)
  }

  /** Resizes the PTY; resolves once its Resize record is in the journal, in output order. */
  async resize(cols: number, rows: number): Promise<void> {
    if (this.exit) return
    await this.link.client.request('resize', { id: this.id, cols, rows }).catch(gone)
  }

  /** Kills the terminal's processes in the keeper (proven its own) and waits for the end of its
   * output; resolves with the pids that survived SIGKILL. */
  async close(graceMs: number): Promise<number[]> {
    const { survivors } = await this.link.client.request('close', { id: this.id, graceMs }).catch(gone)
    return survivors
  }

  /** The keeper forgets the terminal and removes its journal files (this journal's open spool
   * stays readable for its readers). */
  async release(): Promise<void> {
    this.link.forget(this.id)
    if (!this.link.client.closed) await this.link.client.request('release', { id: this.id })
  }

  /** @internal */
  records(records: Records): void {
    hopMark('sidecar: output records from keeper')
    this.journal.apply(records.first, records.count, records.entries, records.bytes)
    this.#onData()
  }

  /** @internal */
  notified(message: Notification): void {
    switch (message.type) {
      case 'end':
        return this.#ended()
      case 'exit':
        if (this.exit) return
        this.exit = message.exit
        return this.#onExit(message.exit)
      case 'backlog':
        this.#backlog = message.bytes
        this.#sentSinceReport = 0
        return
      case 'trouble':
        return this.#trouble(message.failing, message.message, message.code)
      case 'lost':
        console.error(
          `termkeep sidecar: ${message.bytes} bytes of a terminal's output could not be journaled and are lost: ${message.message}`,
        )
        return
    }
  }

  /** @internal the keeper ended: no more output, no exit status. The journal is not ended (its
   * readers drain, then hear `unavailable`: what the PTY still held is lost with the keeper). */
  lost(): void {
    if (this.#failing) writeFailures.succeeded(this)
    this.ended = true
  }

  #ended(): void {
    if (this.ended) return
    this.ended = true
    this.journal.end()
    this.#onEnd()
  }

  /** A journal write failing in the keeper counts in this sidecar's health (storage/disk-full),
   * renewed at each failed try, until it works again. */
  #trouble(failing: boolean, message?: string, code?: string): void {
    if (!failing) {
      if (this.#failing) console.error(`termkeep sidecar: ${JOURNALING} works again`)
      this.#failing = false
      writeFailures.succeeded(this)
      return
    }
    const error = Object.assign(new Error(message ?? 'journal write failed'), code ? { code } : {})
    if (!this.#failing) console.error(`termkeep sidecar: ${JOURNALING} failed; trying again`, error)
    this.#failing = true
    writeFailures.failed(this, JOURNALING, error)
  }
}

/** How the link ended: the keeper is gone (its terminals with it), or only the connection. */
export type LinkEnd = { keeperEnded: true } | { keeperEnded: false; error: Error | undefined }

/** How long a closed connection's keeper may take to be gone before the link counts as broken
 * while the keeper runs (a keeper that stops closes its connections just before it exits). */
const KEEPER_GONE_WAIT_MS = 3_000

/** Whether the keeper of a closed connection ended: it said it was stopping, or its process
 * (pid and start time) is gone within KEEPER_GONE_WAIT_MS. */
async function keeperGone(client: KeeperClient): Promise<boolean> {
  const { pid, startTicks } = client.keeper
  if (client.keeperStopping || startTicks === null) return true
  const deadline = Date.now() + KEEPER_GONE_WAIT_MS
  while (runsAs(pid, startTicks)) {
    if (Date.now() > deadline) return false
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  return true
}

export class KeeperLink {
  readonly client: KeeperClient
  readonly #ptys = new Map<number, KeptPty>()
  /** What the keeper held when the sidecar connected, taken on at once (see `open`). */
  readonly held: KeptPty[] = []
  /** Terminals the keeper held whose journal could not be read. */
  readonly unreadable: Array<{ state: KeptTerminalState; error: Error }> = []

  private constructor(client: KeeperClient) {
    this.client = client
  }

  /**
   * Takes over `client`'s notifications and asks for the keeper's terminals: the backlog, read
   * from their index files at the reply's place in the stream, so the notifications after it
   * continue each journal without a gap. `onEnd` runs once when the link ends.
   */
  static async open(client: KeeperClient, onEnd: (end: LinkEnd) => void): Promise<KeeperLink> {
    let link: KeeperLink | undefined
    client.listen({
      records: (records) => link?.deliver(records),
      notification: (message) => link?.notify(message),
      closed: (error) => {
        void keeperGone(client).then((ended) => {
          if (link && ended) for (const pty of link.#ptys.values()) pty.lost()
          onEnd(ended ? { keeperEnded: true } : { keeperEnded: false, error })
        })
      },
    })
    await client.request('list', {}, (states) => {
      const opened = new KeeperLink(client)
      for (const state of states) {
        try {
          opened.held.push(opened.adopt(state))
        } catch (error) {
          opened.unreadable.push({ state, error: error as Error })
        }
      }
      link = opened
    })
    return link!
  }

  get keeper(): KeeperInfo {
    return this.client.keeper
  }

  /** Takes on a terminal the keeper holds: its journal is read from the index file. */
  adopt(state: KeptTerminalState): KeptPty {
    const pty = new KeptPty(this, state)
    this.#ptys.set(state.id, pty)
    return pty
  }

  /** Starts a terminal in the keeper. Rejects with the keeper's reason (the OS's, for a program
   * that cannot be started). */
  async spawn(sessionId: string, terminalId: string, options: SpawnOptions): Promise<KeptPty> {
    let pty: KeptPty | undefined
    await this.client.request('spawn', { sessionId, terminalId, options }, (state) => (pty = this.adopt(state)))
    return pty!
  }

  /** Kills what terminals of a dead keeper or an earlier sidecar left running (the keeper proves
   * each process first). */
  sweep(terminals: SweepTarget[]): Promise<{ killed: Record<string, number[]>; survivors: number[] }> {
    return this.client.request('sweep', { terminals })
  }

  /** Closes and releases a terminal this sidecar does not take on (its journal unreadable, its row
   * closed). */
  async discard(id: number, graceMs: number): Promise<number[]> {
    const { survivors } = await this.client.request('close', { id, graceMs })
    if (survivors.length === 0) {
      this.forget(id)
      await this.client.request('release', { id })
    }
    return survivors
  }

  /** @internal */
  forget(id: number): void {
    this.#ptys.delete(id)
  }

  close(): void {
    this.client.close()
  }

  /** @internal output of a terminal known here (one not yet known is skipped: see the file comment). */
  deliver(records: Records): void {
    this.#ptys.get(records.id)?.records(records)
  }

  /** @internal */
  notify(message: Notification): void {
    this.#ptys.get(message.id)?.notified(message)
  }
}
