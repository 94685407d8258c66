/**
 * The terminal host of one sidecar generation: every live terminal, keyed by session and id.
 * Every per-terminal call goes through `live()`, which tells an unknown id (404) from one that is
 * no longer live here (410). A terminal row from any earlier generation is history: its id can
 * never be created again.
 */
import { createHmac, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import {
  HISTORY_CELLS,
  MAX_COLS,
  MAX_EXITED_TERMINALS_PER_SESSION,
  MAX_INPUT_BYTES,
  MAX_ROWS,
  MAX_TERMINALS_PER_SESSION,
  MAX_VISIBLE_CELLS,
  MIN_COLS,
  MIN_ROWS,
} from '../../schema/limits.ts'
import { CLOSE_RETRY_MS, TERMINAL_IDLE_RECLAIM_MS } from '../tuning.ts'
import { TermkeepError } from '../../schema/errors.ts'
import type { Geometry } from '../../schema/wire/common.ts'
import type { CreateTerminal, TerminalEnvironment, TerminalInfo, TerminalShell, TerminalWorkflow } from '../../schema/wire/terminals.ts'
import { withShellIntegration } from '../commands/integration.ts'
import { CommandTracker } from '../commands/tracker.ts'
import type { EmulatorPool } from '../emulator/emulator.ts'
import { Journal } from '../journal/journal.ts'
import { removeSpoolTree } from '../journal/spool.ts'
import { killLeftovers } from '../pty/orphans.ts'
import { listShells } from '../pty/shells.ts'
import { PtyThread } from '../pty/pty-thread.ts'
import { LiveTerminal } from './terminal.ts'
import type { CommandStore } from '../../storage/commands.ts'
import { terminalInfoOf, type TerminalStore } from '../../storage/terminals.ts'

export interface TerminalHostOptions {
  store: TerminalStore
  emulators: EmulatorPool
  generation: number
  dataDir: string
  /** Where installed shells are listed (default /etc/shells). */
  shellsFile?: string
  idleReclaimMs?: number
  /** Where command records go (sidecar/commands/); absent: terminals keep no command records. */
  commands?: CommandStore
  /** Shell integration for bash, zsh and fish (docs/commands.md); default on. */
  shellIntegration?: boolean
  /** The key each terminal's shell-integration nonce is derived from (the sidecar's secret), so a
   * sidecar that adopts a terminal can tell its marks again; default: random per host. */
  nonceKey?: string
}

/** A shell-integration nonce file the shell never took (it failed to start, or replaced itself
 * before reading its rc) is removed after this long. */
const NONCE_FILE_LIFETIME_MS = 30_000

/** The terminal type every shell is told it runs in (the emulator is xterm.js). */
export const TERMINAL_TYPE = 'xterm-256color'

/** Variables of the sidecar that a shell must not inherit (secrets, or confusing to a terminal). */
const WITHHELD_ENV = [
  'SIDECAR_SECRET',
  'TERMKEEP_HOST_SECRET',
  'TERMKEEP_FLEET_SECRET',
  'TERMKEEP_ADMIN_TOKEN',
  'DATABASE_AUTH_TOKEN',
  'TMUX',
  'TMUX_PANE',
  'STY',
  'WINDOW',
  'WINDOWID',
  'TERMCAP',
  'COLUMNS',
  'LINES',
]

const keyOf = (sessionId: string, id: string) => `${sessionId}/${id}`

/** A program to run in a new terminal instead of a shell (a workflow's sub-agent). */
export interface ProgramSpec {
  /** argv: the program and its arguments (run directly, not through a shell). */
  command: string[]
  /** Absolute working directory. */
  cwd: string
  /** Added to the environment every terminal gets. */
  env: Record<string, string>
  title: string
  geometry: Geometry
  workflow: TerminalWorkflow
}

interface Launch {
  shell: TerminalShell
  cwd: string
  title: string
  geometry: Geometry
  env: Record<string, string>
  workflow?: TerminalWorkflow
  name?: string
  /** Inject shell integration when the shell is one termkeep integrates. */
  integrate?: boolean
}

export class TerminalHost {
  readonly generation: number
  readonly #options: TerminalHostOptions
  readonly #live = new Map<string, LiveTerminal>()
  readonly #creating = new Map<string, Promise<LiveTerminal>>()
  readonly #idleTimer: NodeJS.Timeout
  /** Every terminal's process runs, and is read, in this thread (pty/pty-worker.ts). */
  readonly #ptys = new PtyThread()
  readonly #nonceKey: string

  constructor(options: TerminalHostOptions) {
    this.#options = options
    this.generation = options.generation
    this.#nonceKey = options.nonceKey ?? randomBytes(32).toString('hex')
    const idle = options.idleReclaimMs ?? TERMINAL_IDLE_RECLAIM_MS
    // 0 turns reclamation off.
    this.#idleTimer = setInterval(() => idle > 0 && this.#reclaimIdle(idle), Math.min(60_000, Math.max(50, idle / 4)))
    this.#idleTimer.unref()
  }

  /** At start: the processes an earlier generation left running (it crashed) are killed, its rows
   * retired and its spool files removed. */
  async start(): Promise<void> {
    const { killed, survivors } = await killLeftovers(await this.#options.store.leftBehind(this.generation))
    if (killed.size > 0) {
      const list = [...killed].map(([terminal, pids]) => `${terminal}: ${pids.join(' ')}`).join('; ')
      const count = [...killed.values()].reduce((n, pids) => n + pids.length, 0)
      console.error(`termkeep sidecar: killed ${count} process(es) an earlier sidecar left running in ${killed.size} terminal(s) (${list})`)
    }
    if (survivors.length > 0) console.error(`termkeep sidecar: processes of earlier terminals survived SIGKILL: ${survivors.join(' ')}`)
    await this.#options.store.retireEarlierGenerations(this.generation)
    await this.#options.commands?.endAbandoned(this.generation)
    removeSpoolTree(join(this.#options.dataDir, 'spool'))
    // Integration scripts are small and regular: a plain recursive remove (never follows a link) is enough.
    rmSync(join(this.#options.dataDir, 'shell-integration'), { recursive: true, force: true })
  }

  async environment(sessionId: string): Promise<TerminalEnvironment> {
    return {
      cwd: await this.#sessionCwd(sessionId),
      limits: {
        maxInputBytes: MAX_INPUT_BYTES,
        minCols: MIN_COLS,
        maxCols: MAX_COLS,
        minRows: MIN_ROWS,
        maxRows: MAX_ROWS,
        maxVisibleCells: MAX_VISIBLE_CELLS,
        historyCells: HISTORY_CELLS,
        maxTerminals: MAX_TERMINALS_PER_SESSION,
      },
    }
  }

  async shells(sessionId: string): Promise<TerminalShell[]> {
    await this.#sessionCwd(sessionId)
    return listShells(this.#options.shellsFile)
  }

  async list(sessionId: string): Promise<TerminalInfo[]> {
    await this.#sessionCwd(sessionId)
    const rows = await this.#options.store.list(sessionId)
    return rows.map((row) => this.#live.get(keyOf(sessionId, row.id))?.info() ?? terminalInfoOf(row))
  }

  async info(sessionId: string, id: string): Promise<TerminalInfo> {
    const live = this.#live.get(keyOf(sessionId, id))
    if (live) return live.info()
    const row = await this.#options.store.get(sessionId, id)
    if (!row) throw notFound(sessionId, id)
    return terminalInfoOf(row)
  }

  /** The live terminal, or 404 (never existed) / 410 (retired or from an earlier generation). */
  async live(sessionId: string, id: string): Promise<LiveTerminal> {
    const live = this.#live.get(keyOf(sessionId, id)) ?? (await this.#creating.get(keyOf(sessionId, id))?.catch(() => undefined))
    if (live && live.state !== 'retired') return live
    if (live || (await this.#options.store.get(sessionId, id))) throw unavailable(id)
    throw notFound(sessionId, id)
  }

  /** Idempotent create: an existing id returns it, a pending create is joined, a closed id is refused. */
  async create(sessionId: string, id: string, request: CreateTerminal): Promise<{ info: TerminalInfo; created: boolean }> {
    const key = keyOf(sessionId, id)
    // A create still spawning is joined: every caller learns its outcome (a failed spawn included).
    const pending = this.#creating.get(key)
    if (pending) return { info: (await pending).info(), created: false }
    const existing = this.#live.get(key)
    if (existing) {
      if (existing.closeRequested) throw closed(id)
      return { info: existing.info(), created: false }
    }
    const terminal = await this.#creation(key, this.#create(sessionId, id, request))
    return { info: terminal.info(), created: true }
  }

  /**
   * A terminal running a program instead of a shell: a workflow's sub-agent (sidecar/workflows).
   * Counted, listed, journaled, displayed, followed and closed like any terminal; the id must be
   * new. A program that cannot be started is an exited terminal with its error, as a shell is.
   */
  async createProgram(sessionId: string, id: string, program: ProgramSpec): Promise<LiveTerminal> {
    const key = keyOf(sessionId, id)
    if (this.#creating.has(key) || this.#live.has(key)) throw closed(id)
    return this.#creation(key, this.#startProgram(sessionId, id, program))
  }

  /** A create in flight is visible to `live()`, `close()` and the session's count until it settles. */
  async #creation(key: string, creation: Promise<LiveTerminal>): Promise<LiveTerminal> {
    this.#creating.set(key, creation)
    try {
      return await creation
    } finally {
      this.#creating.delete(key)
    }
  }

  /** A new title, name (null: none), or both. A name is checked and written first: it must be free. */
  async rename(sessionId: string, id: string, change: { title?: string; name?: string | null }): Promise<TerminalInfo> {
    const { store } = this.#options
    if (!(await store.get(sessionId, id))) throw notFound(sessionId, id)
    if (change.name !== undefined) await this.#claimName(sessionId, id, change.name)
    const live = this.#live.get(keyOf(sessionId, id))
    if (live) {
      if (change.title !== undefined) live.rename(change.title)
      if (change.name !== undefined) live.setName(change.name)
      await live.persisted()
      return live.info()
    }
    if (change.title !== undefined) await store.update(sessionId, id, { title: change.title })
    return this.info(sessionId, id)
  }

  /** Writes `name` as the terminal's, or 409 `name/conflict` when another terminal of the session
   * has it as its name or its id. */
  async #claimName(sessionId: string, id: string, name: string | null): Promise<void> {
    const { store } = this.#options
    if (name !== null && name !== id && (await store.get(sessionId, name))) throw nameTaken(name, 'the id of another terminal')
    try {
      await store.update(sessionId, id, { name })
    } catch (error) {
      if (isUniqueViolation(error)) throw nameTaken(name!, 'the name of another terminal')
      throw error
    }
  }

  /** Close: repeatable; a closed or retired terminal answers with its final info. */
  async close(sessionId: string, id: string): Promise<TerminalInfo> {
    const key = keyOf(sessionId, id)
    const live = this.#live.get(key) ?? (await this.#creating.get(key)?.catch(() => undefined))
    if (live) {
      try {
        await live.close()
      } catch (error) {
        const retry = setTimeout(() => void this.close(sessionId, id).catch(() => {}), CLOSE_RETRY_MS)
        retry.unref()
        throw error
      }
      this.#live.delete(key)
      return live.info()
    }
    return this.info(sessionId, id)
  }

  /** Closes every live terminal of the session (tmux kill-session); answers their final infos. A
   * terminal whose cleanup failed is still tried by the others' closes, then its error is thrown. */
  async closeSession(sessionId: string): Promise<TerminalInfo[]> {
    await this.#sessionCwd(sessionId)
    const ids = new Set<string>()
    for (const terminal of this.#live.values()) if (terminal.sessionId === sessionId) ids.add(terminal.id)
    for (const key of this.#creating.keys()) if (key.startsWith(`${sessionId}/`)) ids.add(key.slice(sessionId.length + 1))
    const results = await Promise.allSettled([...ids].map((id) => this.close(sessionId, id)))
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected')
    if (failed) throw failed.reason
    return results.map((r) => (r as PromiseFulfilledResult<TerminalInfo>).value)
  }

  /** Sidecar shutdown: kill every session, retire every journal and row; no drain. */
  async shutdown(): Promise<void> {
    clearInterval(this.#idleTimer)
    const terminals = [...this.#live.values()]
    this.#live.clear()
    for (const terminal of terminals) terminal.kill()
    await Promise.all(
      terminals.map(async (terminal) => {
        terminal.emulator.dispose()
        terminal.journal.retire()
        // A command still running ends with the journal; its record is written before the exit.
        await terminal.commands?.done
        await terminal.commands?.flushed()
        await terminal.retireRow()
      }),
    )
    await this.#ptys.close()
  }

  async #create(sessionId: string, id: string, request: CreateTerminal): Promise<LiveTerminal> {
    const cwd = await this.#admit(sessionId, id)
    const shells = listShells(this.#options.shellsFile)
    const shell = request.shell === undefined ? shells[0] : shells.find((s) => s.path === request.shell)
    if (!shell) {
      throw new TermkeepError('terminal/shell-not-allowed', `not an installed shell: ${request.shell ?? '(none installed)'}`, {
        shell: request.shell ?? null,
      })
    }
    if (!isDirectory(cwd)) throw new TermkeepError('terminal/spawn-failed', `the session's directory is missing: ${cwd}`, { cwd })
    const geometry = { cols: request.cols, rows: request.rows }
    // A command runs as `shell -c command` (tmux new-window 'cmd', docker run): its exit is the
    // terminal's exit, and the args are recorded in the row like any shell's.
    const launched = request.command === undefined ? shell : { ...shell, args: [...shell.args, '-c', request.command] }
    if (request.name !== undefined && request.name !== id && (await this.#options.store.get(sessionId, request.name)))
      throw nameTaken(request.name, 'the id of another terminal')
    const integrate = (this.#options.shellIntegration ?? true) && request.shellIntegration !== false
    return this.#launch(sessionId, id, {
      shell: launched,
      cwd,
      title: request.title ?? shell.name,
      geometry,
      env: {},
      name: request.name,
      integrate,
    })
  }

  async #startProgram(sessionId: string, id: string, program: ProgramSpec): Promise<LiveTerminal> {
    await this.#admit(sessionId, id)
    if (!isDirectory(program.cwd))
      throw new TermkeepError('terminal/spawn-failed', `the program's directory is missing: ${program.cwd}`, { cwd: program.cwd })
    const [path, ...args] = program.command
    // Named as a stored row names it (terminalInfoOf), so live and listed infos agree.
    const shell = { path, args, name: path.split('/').at(-1) ?? path }
    return this.#launch(sessionId, id, { ...program, shell })
  }

  /** The checks every create makes before anything is stored; resolves with the session's cwd. */
  async #admit(sessionId: string, id: string): Promise<string> {
    if (await this.#options.store.get(sessionId, id)) throw closed(id)
    const cwd = await this.#sessionCwd(sessionId)
    const running = this.#runningIn(sessionId).filter((other) => other !== id) // this create is pending too
    if (running.length >= MAX_TERMINALS_PER_SESSION) throw limitReached(sessionId, running)
    this.#closeOldestExited(sessionId)
    return cwd
  }

  async #launch(sessionId: string, id: string, launch: Launch): Promise<LiveTerminal> {
    const { store, emulators } = this.#options
    const { shell, cwd, title, geometry, workflow } = launch
    const createdAt = Date.now()
    const spawn = this.#spawnSpec(sessionId, id, launch)
    await store
      .insert({
        sessionId,
        id,
        title,
        shellPath: shell.path,
        shellArgs: shell.args,
        cwd,
        cols: geometry.cols,
        rows: geometry.rows,
        state: 'starting',
        hostGeneration: this.generation,
        createdAt,
        updatedAt: createdAt,
        workflowRun: workflow?.run ?? null,
        workflowSeq: workflow?.seq ?? null,
        name: launch.name ?? null,
        commandMarks: spawn.commandMarks,
      })
      .catch((error: unknown) => {
        spawn.discard()
        throw isUniqueViolation(error) && launch.name !== undefined ? nameTaken(launch.name, 'the name of another terminal') : error
      })
    const spool = join(this.#options.dataDir, 'spool', `g${this.generation}`, sessionId, `${id}.journal`)
    const journal = new Journal(spool, geometry)
    const emulator = emulators.open(keyOf(sessionId, id), journal)
    const terminal = new LiveTerminal({
      sessionId,
      id,
      title,
      shell,
      cwd,
      geometry,
      hostGeneration: this.generation,
      createdAt,
      journal,
      emulator,
      store,
      workflow,
      name: launch.name,
      commandMarks: spawn.commandMarks,
    })
    if (spawn.commandMarks === 'injected') terminal.markNonce = spawn.nonce
    const commands = this.#options.commands
    if (commands) {
      terminal.commands = new CommandTracker({
        sessionId,
        terminalId: id,
        journal,
        store: commands,
        nonce: spawn.commandMarks === 'injected' ? spawn.nonce : undefined,
        onDetected: () => terminal.marksDetected(),
      })
    }
    this.#live.set(keyOf(sessionId, id), terminal)
    try {
      await terminal.spawn(this.#ptys, spawn.spec.env, spawn.spec)
    } finally {
      spawn.spawned()
    }
    await terminal.persisted()
    return terminal
  }

  /**
   * What the PTY is spawned with: the program, the environment every terminal gets, and for an
   * interactive bash, zsh or fish the shell integration, whose nonce goes in a file of its own
   * (0600 in a 0700 directory) that the shell reads and deletes (sidecar/commands/integration.ts).
   */
  #spawnSpec(sessionId: string, id: string, launch: Launch) {
    const spec = { file: launch.shell.path, args: launch.shell.args, env: { ...this.#env(sessionId, id), ...launch.env } }
    const plain = { spec, commandMarks: 'none' as const, nonce: undefined, spawned: () => {}, discard: () => {} }
    if (!launch.integrate) return plain
    const dir = join(this.#options.dataDir, 'shell-integration')
    const nonceFile = join(dir, randomBytes(16).toString('hex'))
    const integrated = withShellIntegration(spec, nonceFile)
    if (integrated.commandMarks !== 'injected') return plain
    const nonce = createHmac('sha256', this.#nonceKey)
      .update(`shell-integration\0${this.generation}\0${sessionId}\0${id}`)
      .digest('hex')
      .slice(0, 32)
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    writeFileSync(nonceFile, `${nonce}\n`, { mode: 0o600, flag: 'wx' })
    const discard = () => rmSync(nonceFile, { force: true })
    const spawned = () => setTimeout(discard, NONCE_FILE_LIFETIME_MS).unref()
    return { ...integrated, nonce, spawned, discard }
  }

  #env(sessionId: string, id: string): Record<string, string> {
    const env: Record<string, string> = {}
    for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value
    for (const name of WITHHELD_ENV) delete env[name]
    return { ...env, TERM: TERMINAL_TYPE, COLORTERM: 'truecolor', TERMKEEP_SESSION_ID: sessionId, TERMKEEP_TERMINAL_ID: id }
  }

  /** Ids of a session's creates in flight and terminals whose program runs (a spawning one is
   * both: counted once). An exited terminal is not running, whoever still reads it. */
  #runningIn(sessionId: string): string[] {
    const ids = new Set<string>()
    for (const terminal of this.#live.values()) {
      if (terminal.sessionId === sessionId && (terminal.state === 'starting' || terminal.state === 'running')) ids.add(terminal.id)
    }
    for (const key of this.#creating.keys()) if (key.startsWith(`${sessionId}/`)) ids.add(key.slice(sessionId.length + 1))
    return [...ids]
  }

  /** Exited terminals kept for inspection are bounded per session: the oldest beyond the limit
   * that nobody follows or holds are closed (their rows and screens stay in the database). */
  #closeOldestExited(sessionId: string): void {
    const exited = [...this.#live.values()]
      .filter((t) => t.sessionId === sessionId && t.state === 'exited' && !t.closeRequested)
      .sort((a, b) => (a.exitedAt ?? 0) - (b.exitedAt ?? 0))
    let excess = exited.length - MAX_EXITED_TERMINALS_PER_SESSION
    for (const terminal of exited) {
      if (excess <= 0) break
      if (terminal.holds > 0 || terminal.followers > 0) continue
      excess--
      void this.close(sessionId, terminal.id).catch((error: unknown) =>
        console.error(`termkeep sidecar: closing exited terminal ${sessionId}/${terminal.id} beyond the kept ones`, error),
      )
    }
  }

  async #sessionCwd(sessionId: string): Promise<string> {
    const cwd = await this.#options.store.sessionCwd(sessionId)
    if (cwd === undefined) throw new TermkeepError('session/not-found', `no session ${sessionId}`, { sessionId })
    return cwd
  }

  #reclaimIdle(idleMs: number): void {
    const now = Date.now()
    for (const terminal of this.#live.values()) {
      if (terminal.holds > 0 || terminal.followers > 0 || terminal.closeRequested) continue
      if (now - terminal.lastActivity < idleMs) continue
      void this.close(terminal.sessionId, terminal.id).catch((error: unknown) =>
        console.error(`termkeep sidecar: reclaiming idle terminal ${terminal.sessionId}/${terminal.id}`, error),
      )
    }
  }
}

function isDirectory(path: string): boolean {
  return existsSync(path) && statSync(path).isDirectory()
}

const notFound = (sessionId: string, id: string) =>
  new TermkeepError('terminal/not-found', `no terminal ${id} in session ${sessionId}`, { terminalId: id })
const unavailable = (id: string) =>
  new TermkeepError('terminal/unavailable', `terminal ${id} is no longer live (closed, or from an earlier sidecar)`, {
    terminalId: id,
  })
const limitReached = (sessionId: string, running: string[]) =>
  new TermkeepError(
    'terminal/limit-reached',
    `at most ${MAX_TERMINALS_PER_SESSION} running terminals per session, and ${running.length} are running (${running.join(', ')}); ` +
      'a terminal whose program exited does not count. Close one (DELETE /v1/sessions/' +
      `${sessionId}/terminals/<id>, MCP close_terminal) or let its program end to free a place`,
    { limit: MAX_TERMINALS_PER_SESSION, running },
  )
const nameTaken = (name: string, what: string) =>
  new TermkeepError('name/conflict', `the name ${name} is taken: it is ${what} in this session`, { name })
/** SQLite's UNIQUE constraint failure (libSQL reports it in the message and as SQLITE_CONSTRAINT). */
function isUniqueViolation(error: unknown): boolean {
  const text = `${(error as { message?: string })?.message ?? ''} ${String((error as { cause?: unknown })?.cause ?? '')}`
  return text.includes('UNIQUE constraint failed')
}
const closed = (id: string) =>
  new TermkeepError('terminal/closed', `terminal id ${id} was closed and cannot be created again`, { terminalId: id })
