/**
 * One live terminal: its PTY, its journal, its emulator, its attachments and its row. The
 * lifecycle only moves forward (starting → running → exited → closed → retired); every change is
 * persisted in order and announced to followers through `changes`.
 */
import { CLOSE_KILL_GRACE_MS } from '../../schema/limits.ts'
import { TermkeepError } from '../../schema/errors.ts'
import { type CommandMarks, TERMINAL_STATES, type TerminalState } from '../../schema/wire/terminals.ts'
import type { Geometry } from '../../schema/wire/common.ts'
import type { FollowControl, Sender, TerminalInfo, TerminalShell, TerminalWorkflow } from '../../schema/wire/terminals.ts'
import type { CommandTracker } from '../commands/tracker.ts'
import type { Emulator } from '../emulator/emulator.ts'
import type { Journal } from '../journal/journal.ts'
import { isDatabaseUnavailable } from '../../storage/unavailable.ts'
import { Notifier } from '../journal/notifier.ts'
import { ForegroundTracker } from '../observation/foreground.ts'
import { executableNameOf } from '../observation/proc.ts'
import { Retry } from '../write-retry.ts'
import type { KeptPty } from './keeper-link.ts'
import { InputKeys, type RememberedKey } from './input-keys.ts'
import type { TerminalPatch, TerminalStore } from '../../storage/terminals.ts'

export interface TerminalInit {
  sessionId: string
  id: string
  title: string
  shell: TerminalShell
  cwd: string
  geometry: Geometry
  hostGeneration: number
  createdAt: number
  journal: Journal
  emulator: Emulator
  store: TerminalStore
  /** A workflow run's sub-agent terminal. */
  workflow?: TerminalWorkflow
  name?: string | null
  /** Where its command marks come from (sidecar/commands/integration.ts). */
  commandMarks?: CommandMarks
}

interface Controller {
  id: string
  principal: string | undefined
  /** Its attachment id and principal together: the key of its count of open follow streams. */
  key: string
}

export class LiveTerminal {
  readonly sessionId: string
  readonly id: string
  readonly shell: TerminalShell
  readonly cwd: string
  readonly hostGeneration: number
  readonly createdAt: number
  readonly journal: Journal
  readonly emulator: Emulator
  readonly workflow: TerminalWorkflow | undefined
  /** Wakes followers on any info change (state, title, geometry, controller). */
  readonly changes = new Notifier()
  /** Bumped on every info change, so a follower can tell whether it has sent the latest. */
  version = 0
  title: string
  cols: number
  rows: number
  state: TerminalState = 'starting'
  exitCode: number | null = null
  exitSignal: number | null = null
  error: string | null = null
  /** When the program exited (or failed to start); null while it runs. */
  exitedAt: number | null = null
  name: string | null
  commandMarks: CommandMarks
  /** Its commands, from the marks in its journal (sidecar/commands/); set once at launch. */
  commands: CommandTracker | undefined
  /** The nonce its shell's command marks carry (injected integration only); set once at launch. */
  markNonce: string | undefined
  /** The foreground program's name (observation/foreground.ts); null before spawn and after exit. */
  foregroundCommand: string | null = null
  closedAt: number | null = null
  updatedAt: number
  /** Open retain streams and follow streams: either suspends idle reclamation. */
  holds = 0
  followers = 0
  lastActivity = Date.now()
  readonly #store: TerminalStore
  #pty: KeptPty | undefined
  #foreground: ForegroundTracker | undefined
  #controller: Controller | undefined
  /** Changes not yet written to the row (merged; a later value wins), the write in flight, the
   * last write's failure while a retry waits, and the retry. */
  #unwritten: TerminalPatch = {}
  #writing: Promise<void> | undefined
  #writeFailure: unknown
  readonly #retry: Retry
  #resizing: Promise<void> = Promise.resolve()
  /** Open follow streams per attachment (id and principal). */
  readonly #streams = new Map<string, number>()
  readonly #inputKeys = new InputKeys()
  #closing: Promise<void> | undefined
  #closeRequested = false

  constructor(init: TerminalInit) {
    this.sessionId = init.sessionId
    this.id = init.id
    this.#retry = new Retry(`persisting terminal ${init.sessionId}/${init.id}`)
    this.title = init.title
    this.shell = init.shell
    this.cwd = init.cwd
    this.cols = init.geometry.cols
    this.rows = init.geometry.rows
    this.hostGeneration = init.hostGeneration
    this.createdAt = init.createdAt
    this.updatedAt = init.createdAt
    this.journal = init.journal
    this.emulator = init.emulator
    this.workflow = init.workflow
    this.name = init.name ?? null
    this.commandMarks = init.commandMarks ?? 'none'
    this.#store = init.store
  }

  /** The pid of the program the terminal started (its session leader), once spawned. */
  get processId(): number | undefined {
    return this.#pty && this.#pty.pid > 0 ? this.#pty.pid : undefined
  }

  /** N of the PTY's slave /dev/pts/N, when the kernel proved it for the master descriptor. */
  get ttyIndex(): number | undefined {
    return this.#pty?.ttyIndex
  }

  /** Does the follow that attached as `key` hold control now? */
  controls(key: string): boolean {
    return this.#controller?.key === key
  }

  get controllerId(): string | null {
    return this.#controller?.id ?? null
  }

  /** True once close was asked for: the id is refused for creation from then on. */
  get closeRequested(): boolean {
    return this.#closeRequested
  }

  info(geometry: Geometry = this): TerminalInfo {
    return {
      sessionId: this.sessionId,
      id: this.id,
      title: this.title,
      shell: this.shell,
      cwd: this.cwd,
      cols: geometry.cols,
      rows: geometry.rows,
      state: this.state,
      exitCode: this.exitCode,
      exitSignal: this.exitSignal,
      error: this.error,
      hostGeneration: this.hostGeneration,
      controllerId: this.state === 'retired' || this.state === 'closed' ? null : this.controllerId,
      createdAt: this.createdAt,
      updatedAt: this.updatedAt,
      closedAt: this.closedAt,
      foregroundCommand: this.foregroundCommand,
      ...(this.workflow ? { workflow: this.workflow } : {}),
      name: this.name,
      commandMarks: this.commandMarks,
    }
  }

  /**
   * The terminal's program runs in the keeper (just spawned, or adopted after a restart of this
   * sidecar): its output goes to this journal, its exit (also one that happened while no sidecar
   * ran) moves the state on.
   */
  started(pty: KeptPty): void {
    this.#pty = pty
    this.#inputKeys.seed(pty.inputKeys)
    // What the shell starts and ends shows in the terminal's I/O: look at the foreground then.
    const started = executableNameOf([this.shell.path], this.shell.name)
    const foreground = new ForegroundTracker(pty.pid, started, (name) => {
      this.foregroundCommand = name
      this.#changed({ foregroundCommand: name })
    })
    this.#foreground = foreground
    pty.onData(() => {
      this.lastActivity = Date.now()
      foreground.poke()
    })
    this.foregroundCommand = started
    // Recorded with the state, so that what a crash of the keeper leaves is found (keeper/identity.ts).
    this.#advance('running', { foregroundCommand: started, ...pty.identity })
    pty.onExit(({ exitCode, signal, at }) => {
      foreground.close()
      this.exitCode = exitCode
      this.exitSignal = signal
      this.foregroundCommand = null
      this.exitedAt = at
      this.#advance('exited', { exitCode, exitSignal: signal, exitedAt: at, foregroundCommand: null })
    })
  }

  /** The program could not be started: kept as an exited terminal with its error. */
  failed(reason: string): TermkeepError {
    this.error = `spawn failed: ${reason}`
    this.journal.end()
    this.exitedAt = Date.now()
    this.#advance('exited', { error: this.error, exitedAt: this.exitedAt })
    return new TermkeepError('terminal/spawn-failed', this.error)
  }

  /** Input from the sidecar itself, not from an attachment (a workflow's `stdin` prompt). */
  inject(bytes: Uint8Array): void {
    if (this.state !== 'running' || !this.#pty || this.#closeRequested) {
      throw new TermkeepError('terminal/control-unavailable', `terminal ${this.id} is not running`, { reason: 'not-running' })
    }
    this.#pty.write(bytes)
    this.commands?.typed()
  }

  /**
   * Raw input from the controlling attachment. Refused input is dropped, never queued. With an
   * idempotency key, a batch this principal already sent under it is not written again (it was
   * applied the first time).
   */
  write(sender: Sender, bytes: Uint8Array, key?: string): void {
    const write = (remembered?: RememberedKey) => {
      this.#requireControl(sender).write(bytes, remembered)
      this.commands?.typed()
      this.lastActivity = Date.now()
      this.#foreground?.poke()
    }
    if (key === undefined) write()
    else this.#inputKeys.apply(sender.principal, sender.attachment, key, bytes, write)
  }

  /** Resizes the PTY and journals the Resize in output order (the emulator follows the journal). */
  async resize(sender: Sender, geometry: Geometry): Promise<void> {
    const pty = this.#requireControl(sender)
    // One at a time, in arrival order: each compares with the geometry the one before it left, so
    // an answer never reports a size the PTY does not have.
    const resized = this.#resizing.then(async () => {
      // The program may have exited while this one waited: refused like any resize then.
      this.#requireControl(sender)
      if (geometry.cols === this.cols && geometry.rows === this.rows) return
      await pty.resize(geometry.cols, geometry.rows)
      this.cols = geometry.cols
      this.rows = geometry.rows
      this.lastActivity = Date.now()
      this.#changed({ cols: geometry.cols, rows: geometry.rows })
    })
    this.#resizing = resized.catch(() => undefined)
    return resized
  }

  rename(title: string): void {
    this.title = title
    this.#changed({ title })
  }

  /** A new name (null: none); the caller checked it is free. */
  setName(name: string | null): void {
    this.name = name
    this.#changed({ name })
  }

  /** A prompt of its own emits command marks (the tracker saw them; no integration was injected). */
  marksDetected(): void {
    if (this.commandMarks !== 'none') return
    this.commandMarks = 'detected'
    this.#changed({ commandMarks: 'detected' })
  }

  /**
   * One write under control taken for it alone (POST …/keys), as a follow with the same `control`
   * takes it: `if-free` refuses while another attachment controls; `take` takes it whoever held
   * it. Control is free again after the write (the holder it was taken from takes it back, as
   * after a follow's end). Returns whose control was taken.
   */
  writeOnce(sender: Sender, bytes: Uint8Array, control: FollowControl, key?: string): { tookControlFrom: string | null } {
    const held = this.#controller
    const own = `${sender.principal ?? ''}/${sender.attachment}`
    if (held?.key === own) {
      this.write(sender, bytes, key)
      return { tookControlFrom: null }
    }
    if (held && control === 'if-free') {
      throw new TermkeepError('terminal/control-unavailable', `another attachment (${held.id}) controls terminal ${this.id}`, {
        reason: 'controlled',
        controllerId: held.id,
      })
    }
    const once = { id: sender.attachment ?? '', principal: sender.principal, key: `${own}#once` }
    this.#controller = once
    try {
      this.write(sender, bytes, key)
    } finally {
      if (this.#controller === once) this.#controller = undefined
      this.#changed({})
    }
    return { tookControlFrom: held?.id ?? null }
  }

  /** A follow stream attaches: it becomes the exclusive controller; the previous one is read-only.
   * Returns the handle to detach with. With `ifFree`, another attachment holding control refuses
   * the attach instead (checked and attached in one step: nothing can take control in between). */
  attach(attachmentId: string, principal?: string, ifFree = false): string {
    const key = `${principal ?? ''}/${attachmentId}`
    if (ifFree && this.#controller !== undefined && this.#controller.key !== key) {
      throw new TermkeepError('terminal/control-unavailable', `another attachment (${this.#controller.id}) controls terminal ${this.id}`, {
        reason: 'controlled',
        controllerId: this.#controller.id,
      })
    }
    this.#streams.set(key, (this.#streams.get(key) ?? 0) + 1)
    this.#controller = { id: attachmentId, principal, key }
    this.followers++
    this.lastActivity = Date.now()
    this.#changed({})
    return key
  }

  /** A follow stream ended: control is released when it was the controller's last open stream
   * (a client may hold two streams of one attachment, e.g. across a reconnect). */
  detach(key: string): void {
    this.followers--
    this.lastActivity = Date.now()
    const left = (this.#streams.get(key) ?? 1) - 1
    if (left > 0) return void this.#streams.set(key, left)
    this.#streams.delete(key)
    if (this.#controller?.key === key) {
      this.#controller = undefined
      this.#changed({})
    }
  }

  /**
   * Every change so far is in the database. Rejects with the database's error while a failed
   * write waits to be tried again (the change is kept and lands when the database answers).
   */
  async persisted(): Promise<void> {
    await this.flushed()
    if (this.#retry.pending) throw this.#writeFailure
  }

  /** The writes in flight have landed or failed (a failed one is retried later). Never rejects. */
  async flushed(): Promise<void> {
    while (this.#writing) await this.#writing
  }

  /**
   * Kills the session's processes, drains output to EOF, ends followers, releases the emulator and
   * the journal (retirement). Concurrent and repeated calls share one attempt; a failed attempt
   * leaves the terminal live for a retry.
   */
  close(): Promise<void> {
    this.#closeRequested = true
    this.#closing ??= this.#close().catch((error: unknown) => {
      this.#closing = undefined
      throw error
    })
    return this.#closing
  }

  async #close(): Promise<void> {
    this.#foreground?.close()
    const pty = this.#pty
    if (pty) {
      // The keeper kills only processes proven this terminal's (even after its shell exited and
      // its pid was reused), drains the output to its end, and forces the master closed if a
      // process outside the session still holds the slave.
      const survivors = await pty.close(CLOSE_KILL_GRACE_MS)
      if (survivors.length > 0) {
        throw new TermkeepError('terminal/cleanup-failed', `processes ${survivors.join(', ')} survived SIGKILL`, {
          pids: survivors,
        })
      }
      this.journal.end()
    }
    this.closedAt = Date.now()
    this.#advance('closed', { closedAt: this.closedAt })
    this.emulator.dispose()
    this.journal.retire({ forGood: true })
    this.#advance('retired', {})
    if (pty) {
      await pty
        .release()
        .catch((error: unknown) => console.error(`termkeep sidecar: releasing ${this.sessionId}/${this.id} in the keeper failed`, error))
    }
    // The close happened whether or not the database took its row yet: a failed write is retried.
    await this.flushed()
  }

  /**
   * This sidecar stops; the terminal goes on in the keeper. The screen is settled a last time
   * (the emulator's drain), the row gets every change not yet written, and nothing else changes:
   * the next sidecar adopts it.
   */
  async leave(): Promise<void> {
    this.#foreground?.close()
    this.commands?.leave()
    this.emulator.dispose()
    this.journal.retire()
    // Every command record read so far is written (the next sidecar reads the marks again).
    await this.commands?.done
    await this.commands?.flushed()
    // A pending retry would land after this process is gone: one last write now instead.
    this.#retry.cancel()
    await this.flushed()
    const patch = this.#unwritten
    this.#unwritten = {}
    if (Object.keys(patch).length === 0) return
    await this.#store.update(this.sessionId, this.id, patch).catch((error: unknown) => {
      // The keeper still knows the exit: the next sidecar writes it when it adopts the terminal.
      console.error(`termkeep sidecar: writing terminal ${this.sessionId}/${this.id} at shutdown failed`, error)
    })
  }

  /**
   * The keeper ended (killed, `termkeep stop --terminals`, a reboot): the program went with it.
   * Readers drain what was journaled, the last screen is settled, the row is retired.
   */
  lost(): void {
    this.#foreground?.close()
    this.foregroundCommand = null
    this.emulator.dispose()
    this.journal.retire({ forGood: true })
    this.#advance('retired', { foregroundCommand: null })
  }

  #requireControl({ attachment, principal }: Sender): KeptPty {
    if (this.state !== 'running' || !this.#pty || this.#closeRequested) {
      throw new TermkeepError('terminal/control-unavailable', `terminal ${this.id} is not running`, { reason: 'not-running' })
    }
    if (!attachment || attachment !== this.#controller?.id || principal !== this.#controller.principal) {
      throw new TermkeepError('terminal/control-unavailable', 'this attachment is read-only (not the current controller)', {
        reason: 'read-only',
      })
    }
    return this.#pty
  }

  #advance(state: TerminalState, patch: TerminalPatch): void {
    if (TERMINAL_STATES.indexOf(state) <= TERMINAL_STATES.indexOf(this.state)) return
    this.state = state
    this.#changed({ ...patch, state })
  }

  #changed(patch: TerminalPatch): void {
    this.updatedAt = Date.now()
    this.version++
    this.changes.notify()
    if (Object.keys(patch).length === 0) return
    Object.assign(this.#unwritten, patch)
    if (!this.#retry.pending) this.#writing ??= this.#write()
  }

  /** Writes the unwritten changes, in order, until none are left or a write fails; a failure keeps
   * them (under any newer ones) and tries again with backoff. */
  async #write(): Promise<void> {
    try {
      while (Object.keys(this.#unwritten).length > 0) {
        const patch = this.#unwritten
        this.#unwritten = {}
        try {
          await this.#store.update(this.sessionId, this.id, patch)
        } catch (error) {
          // Only a database that cannot take the write now is waited for; anything else is a bug
          // that a retry would repeat forever.
          if (!isDatabaseUnavailable(error)) {
            console.error(`termkeep sidecar: persisting terminal ${this.sessionId}/${this.id} failed`, error)
            continue
          }
          this.#unwritten = { ...patch, ...this.#unwritten }
          this.#writeFailure = error
          this.#retry.failed(error, () => (this.#writing ??= this.#write()))
          return
        }
        this.#retry.succeeded()
        this.#writeFailure = undefined
      }
    } finally {
      this.#writing = undefined
    }
  }
}
