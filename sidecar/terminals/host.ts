/**
 * The terminal host of one sidecar generation: every live terminal, keyed by session and id.
 * Every per-terminal call goes through `live()`, which tells an unknown id (404) from one that is
 * no longer live here (410). A terminal row from any earlier generation is history: its id can
 * never be created again.
 */
import { existsSync, statSync } from 'node:fs'
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
import type { EmulatorPool } from '../emulator/emulator.ts'
import { Journal } from '../journal/journal.ts'
import { removeSpoolTree } from '../journal/spool.ts'
import { killLeftovers } from '../pty/orphans.ts'
import { listShells } from '../pty/shells.ts'
import { PtyThread } from '../pty/pty-thread.ts'
import { LiveTerminal } from './terminal.ts'
import { terminalInfoOf, type TerminalStore } from '../../storage/terminals.ts'

export interface TerminalHostOptions {
  store: TerminalStore
  emulators: EmulatorPool
  generation: number
  dataDir: string
  /** Where installed shells are listed (default /etc/shells). */
  shellsFile?: string
  idleReclaimMs?: number
}

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
}

export class TerminalHost {
  readonly generation: number
  readonly #options: TerminalHostOptions
  readonly #live = new Map<string, LiveTerminal>()
  readonly #creating = new Map<string, Promise<LiveTerminal>>()
  readonly #idleTimer: NodeJS.Timeout
  /** Every terminal's process runs, and is read, in this thread (pty/pty-worker.ts). */
  readonly #ptys = new PtyThread()

  constructor(options: TerminalHostOptions) {
    this.#options = options
    this.generation = options.generation
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
    removeSpoolTree(join(this.#options.dataDir, 'spool'))
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

  async rename(sessionId: string, id: string, title: string): Promise<TerminalInfo> {
    const live = this.#live.get(keyOf(sessionId, id))
    if (live) {
      live.rename(title)
      await live.persisted()
      return live.info()
    }
    if (!(await this.#options.store.update(sessionId, id, { title }))) throw notFound(sessionId, id)
    return this.info(sessionId, id)
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
    return this.#launch(sessionId, id, { shell: launched, cwd, title: request.title ?? shell.name, geometry, env: {} })
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
    await store.insert({
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
    })
    this.#live.set(keyOf(sessionId, id), terminal)
    await terminal.spawn(this.#ptys, { ...this.#env(sessionId, id), ...launch.env })
    await terminal.persisted()
    return terminal
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
const closed = (id: string) =>
  new TermkeepError('terminal/closed', `terminal id ${id} was closed and cannot be created again`, { terminalId: id })
