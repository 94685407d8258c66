/**
 * The keeper's terminals: each one's PTY (in the PTY thread), its journal files and its identity.
 * Output is journaled here, then handed to the subscriber (the connected sidecar, if any): the
 * journal never waits for a sidecar, and a sidecar that comes later reads what it missed from
 * the files. Every per-terminal call goes through `get()`, which throws for an unknown id.
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import { CLOSE_DRAIN_MS, INPUT_KEY_MEMORY_MS, INPUT_KEYS_REMEMBERED } from '../schema/limits.ts'
import type { KeptExit, KeptInputKey, KeptTerminalState, KeeperMessage, SpawnOptions } from '../local/keeper/protocol.ts'
import { type Appended, JournalWriter } from '../local/journal/writer.ts'
import { leaderIdentity, ticksSinceBoot, type TerminalIdentity } from './identity.ts'
import { killSession, killTerminals } from './kill.ts'
import { log } from './log.ts'
import type { PtyExit } from './pty/pty-process.ts'
import { type OutputSink, type OutputTrouble, PtyThread, type RemotePty } from './pty/pty-thread.ts'
import { writeIdentity } from './records.ts'
import { KEEPER_STOP_GRACE_MS, KEEPER_STOP_WAIT_MS } from './tuning.ts'

/** Session and terminal ids name files: the wire contract's id pattern, checked again here. */
const ID = /^[\w-]{1,128}$/

/** Where a terminal's output and events go once journaled (keeper/server.ts: the sidecar). */
export interface Subscriber {
  records(terminal: number, appended: Appended, bytes?: Uint8Array): void
  notify(message: KeeperMessage): void
}

export class KeptTerminal implements OutputSink, OutputTrouble {
  pty: RemotePty | undefined
  identity: TerminalIdentity | undefined
  ended = false
  exit: KeptExit | null = null
  backlog = 0
  failure: { message: string; code?: string } | undefined
  /** Idempotency-Keys of input batches, oldest first (the sidecar's memory of them, kept here for
   * the next sidecar: sidecar/terminals/input-keys.ts). */
  readonly inputKeys = new Map<string, KeptInputKey>()
  #closing: Promise<{ survivors: number[] }> | undefined
  #endWaiters: Array<() => void> = []

  constructor(
    readonly id: number,
    readonly sessionId: string,
    readonly terminalId: string,
    readonly writer: JournalWriter,
    readonly identityPath: string,
    private readonly owner: KeptTerminals,
  ) {}

  get key(): string {
    return `${this.sessionId}/${this.terminalId}`
  }

  appendFlushed(bytes: Uint8Array): void {
    this.owner.published(this, this.writer.appendData([bytes], bytes.length), bytes)
  }

  appendResize(cols: number, rows: number): void {
    this.owner.published(this, this.writer.appendResize(cols, rows))
  }

  failing(error: Error, first: boolean): void {
    const code = (error as NodeJS.ErrnoException).code
    this.failure = { message: error.message, ...(code ? { code } : {}) }
    if (first) log(`journaling ${this.key} failed; its program is paused until it works again`, error)
    this.owner.notify({ type: 'trouble', id: this.id, failing: true, message: error.message, ...(code ? { code } : {}) })
  }

  recovered(): void {
    this.failure = undefined
    log(`journaling ${this.key} works again`)
    this.owner.notify({ type: 'trouble', id: this.id, failing: false })
  }

  lost(bytes: number, error: Error | undefined): void {
    const message = error?.message ?? 'the terminal was closed'
    log(`${bytes} bytes of ${this.key}'s output could not be journaled and are lost`, error)
    this.owner.notify({ type: 'lost', id: this.id, bytes, message })
  }

  /** @internal the PTY is running: its end, exit and backlog are reported from now on. */
  started(pty: RemotePty, identity: TerminalIdentity | undefined): void {
    this.pty = pty
    this.identity = identity
    pty.onBacklog((bytes) => {
      this.backlog = bytes
      this.owner.notify({ type: 'backlog', id: this.id, bytes })
    })
    pty.onEnd(() => {
      this.ended = true
      this.owner.notify({ type: 'end', id: this.id })
      for (const resolve of this.#endWaiters.splice(0)) resolve()
    })
    pty.onExit((exit: PtyExit) => {
      this.exit = { ...exit, at: Date.now() }
      this.owner.notify({ type: 'exit', id: this.id, exit: this.exit })
    })
  }

  state(): KeptTerminalState {
    const writer = this.writer
    return {
      id: this.id,
      sessionId: this.sessionId,
      terminalId: this.terminalId,
      pid: this.pty?.pid ?? 0,
      ...(this.pty?.ttyIndex !== undefined ? { ttyIndex: this.pty.ttyIndex } : {}),
      ...(this.identity
        ? {
            identity: {
              leaderPid: this.identity.leaderPid,
              leaderStartTicks: this.identity.leaderStartTicks,
              bootId: this.identity.bootId,
            },
          }
        : {}),
      journal: {
        spool: writer.paths.spool,
        index: writer.paths.index,
        startedAt: writer.startedAt,
        initialCols: writer.initialSize.cols,
        initialRows: writer.initialSize.rows,
        lastSequence: writer.lastSequence,
      },
      cols: writer.geometry.cols,
      rows: writer.geometry.rows,
      ended: this.ended,
      exit: this.exit,
      backlog: this.backlog,
      ...(this.failure ? { failing: this.failure } : {}),
      inputKeys: [...this.inputKeys.values()],
    }
  }

  /** Kills the terminal's processes (only those proven its own), waits for the end of its output
   * (forcing the master closed after CLOSE_DRAIN_MS). Survivors of SIGKILL keep it open. */
  close(graceMs: number): Promise<{ survivors: number[] }> {
    this.#closing ??= this.#close(graceMs).finally(() => (this.#closing = undefined))
    return this.#closing
  }

  async #close(graceMs: number): Promise<{ survivors: number[] }> {
    const pty = this.pty
    if (!pty) return { survivors: [] }
    const survivors = this.identity ? await killSession(this.identity, graceMs) : []
    if (survivors.length > 0) return { survivors }
    await this.#untilEnded(CLOSE_DRAIN_MS)
    // A process outside the session may still hold the slave: read what is there and stop.
    if (!this.ended) await pty.forceClose()
    return { survivors: [] }
  }

  #untilEnded(ms: number): Promise<void> {
    if (this.ended) return Promise.resolve()
    return new Promise((resolve) => {
      const timer = setTimeout(resolve, ms)
      this.#endWaiters.push(() => {
        clearTimeout(timer)
        resolve()
      })
    })
  }
}

export class KeptTerminals {
  readonly #byId = new Map<number, KeptTerminal>()
  readonly #thread = new PtyThread()
  readonly #instanceDir: string
  #nextId = 1
  #subscriber: Subscriber | undefined
  #stopping = false

  /** `instanceDir`: this keeper's own journal directory. */
  constructor(instanceDir: string) {
    this.#instanceDir = instanceDir
  }

  get size(): number {
    return this.#byId.size
  }

  /** Output and events go to `subscriber` from now on (undefined: nobody listens). */
  subscribe(subscriber: Subscriber | undefined): void {
    this.#subscriber = subscriber
  }

  list(): KeptTerminalState[] {
    return [...this.#byId.values()].map((t) => t.state())
  }

  has(id: number): boolean {
    return this.#byId.has(id)
  }

  get(id: number): KeptTerminal {
    const terminal = this.#byId.get(id)
    if (!terminal) throw new Error(`no terminal ${id} in this keeper`)
    return terminal
  }

  /** Starts a terminal: its journal files, its process, its identity on disk. */
  async spawn(sessionId: string, terminalId: string, options: SpawnOptions): Promise<KeptTerminal> {
    if (this.#stopping) throw new Error('the keeper is stopping')
    if (!ID.test(sessionId) || !ID.test(terminalId)) throw new Error('session and terminal ids are 1–128 word characters or dashes')
    for (const t of this.#byId.values()) {
      if (t.sessionId === sessionId && t.terminalId === terminalId) throw new Error(`terminal ${sessionId}/${terminalId} already runs here`)
    }
    const base = join(this.#instanceDir, sessionId, terminalId)
    const writer = new JournalWriter({ spool: `${base}.journal`, index: `${base}.index` }, { cols: options.cols, rows: options.rows })
    const terminal = new KeptTerminal(this.#nextId++, sessionId, terminalId, writer, `${base}.identity`, this)
    this.#byId.set(terminal.id, terminal)
    const before = ticksSinceBoot()
    let pty: RemotePty
    try {
      pty = await this.#thread.spawn(options, terminal, terminal)
    } catch (error) {
      this.#byId.delete(terminal.id)
      writer.remove()
      throw error
    }
    const leader = leaderIdentity(pty.pid, before) // at once, while the child is surely ours
    const identity = leader && { ...leader, sessionId, id: terminalId }
    terminal.started(pty, identity)
    if (identity) {
      try {
        writeIdentity(terminal.identityPath, identity)
      } catch (error) {
        log(`the identity of ${terminal.key} was not written (a keeper after a crash of this one will not find its processes)`, error)
      }
    }
    return terminal
  }

  write(id: number, bytes: Uint8Array, key?: KeptInputKey): void {
    const terminal = this.get(id)
    if (key) {
      terminal.inputKeys.delete(key.id)
      terminal.inputKeys.set(key.id, key)
      const horizon = Date.now() - INPUT_KEY_MEMORY_MS
      for (const [keyId, kept] of terminal.inputKeys) {
        if (terminal.inputKeys.size <= INPUT_KEYS_REMEMBERED && kept.at > horizon) break
        terminal.inputKeys.delete(keyId)
      }
    }
    terminal.pty?.write(bytes)
  }

  async resize(id: number, cols: number, rows: number): Promise<void> {
    await this.get(id).pty?.resize(cols, rows)
  }

  close(id: number, graceMs: number): Promise<{ survivors: number[] }> {
    return this.get(id).close(graceMs)
  }

  /** Forgets a terminal and removes its files; one still running is closed first. */
  async release(id: number): Promise<void> {
    const terminal = this.get(id)
    if (terminal.exit === null && terminal.pty) {
      const { survivors } = await terminal.close(0)
      if (survivors.length > 0) throw new Error(`processes ${survivors.join(', ')} survived SIGKILL`)
    }
    this.#byId.delete(id)
    rmSync(terminal.identityPath, { force: true })
    terminal.writer.remove()
  }

  /** @internal journaled output of `terminal`, for the subscriber. */
  published(terminal: KeptTerminal, appended: Appended, bytes?: Uint8Array): void {
    this.#subscriber?.records(terminal.id, appended, bytes)
  }

  /** @internal */
  notify(message: KeeperMessage): void {
    this.#subscriber?.notify(message)
  }

  /** The keeper stops: every terminal's processes are killed (SIGHUP, then SIGKILL), their exits
   * reported, the PTY thread ended. Resolves with the pids that survived. */
  async stop(): Promise<number[]> {
    this.#stopping = true
    const identities = [...this.#byId.values()].flatMap((t) => (t.identity && t.exit === null ? [t.identity] : []))
    const { survivors } = await killTerminals(identities, KEEPER_STOP_GRACE_MS, KEEPER_STOP_WAIT_MS)
    await this.#thread.close()
    return survivors
  }
}
