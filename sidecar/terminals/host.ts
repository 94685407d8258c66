/**
 * The terminal host of one sidecar generation: every live terminal, keyed by session and id.
 * The terminals' programs run in the data directory's keeper (keeper/): at start the host adopts
 * every terminal the keeper still holds (an earlier sidecar's: this one may be a restart, or a
 * newer release) and retires the rows whose program is gone with an earlier keeper. Every
 * per-terminal call goes through `live()`, which tells an unknown id (404) from one that is no
 * longer live here (410). An id used once can never be created again in its session.
 */
import { createHmac, randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import {
  CLOSE_KILL_GRACE_MS,
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
import type { KeeperClient } from '../../local/keeper/client.ts'
import type { KeeperInfo, SweepTarget } from '../../local/keeper/protocol.ts'
import { KEEPER_ENTRY } from '../../local/keeper/start.ts'
import { isHolder } from '../../local/pid-lock.ts'
import { processStat } from '../../local/proc.ts'
import type { EmulatorPool } from '../emulator/emulator.ts'
import { Journal } from '../journal/journal.ts'
import { withShellIntegration } from '../commands/integration.ts'
import { CommandTracker } from '../commands/tracker.ts'
import { removeSpoolTree } from '../journal/spool.ts'
import { listShells } from '../pty/shells.ts'
import { KeeperLink, type KeptPty, type LinkEnd } from './keeper-link.ts'
import { LiveTerminal } from './terminal.ts'
import type { CommandStore } from '../../storage/commands.ts'
import { terminalInfoOf, type TerminalRow, type TerminalStore } from '../../storage/terminals.ts'

export interface TerminalHostOptions {
  store: TerminalStore
  emulators: EmulatorPool
  generation: number
  dataDir: string
  /** Where installed shells are listed (default /etc/shells). */
  shellsFile?: string
  idleReclaimMs?: number
  /** Reaches the data directory's keeper, starting one when none runs. */
  keeper: () => Promise<KeeperClient>
  /** A terminal's newest settled revision: where its adopted screen resumes. */
  settled?: (sessionId: string, id: string) => Promise<{ sequence: number; restorable: boolean } | undefined>
  /** The connection to a keeper that still runs broke (a bug on one side): this sidecar cannot
   * go on, and a restarted one adopts the terminals again. */
  linkBroken?: (error: Error | undefined) => void
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
  /** The keeper's link, or its (re)connection under way. */
  #link: Promise<KeeperLink> | undefined
  /** The connected keeper, once linked. */
  keeper: KeeperInfo | undefined
  #stopping = false
  /** Rows of terminals whose keeper ended, being retired (a stop waits for them). */
  #retiring: Promise<unknown> = Promise.resolve()
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

  /**
   * At start: connects to the keeper (starting one), adopts every terminal it holds that this
   * database knows as live on this host, and retires the rows whose program is gone with an
   * earlier keeper (after the keeper killed what they left running). Resolves with what it did,
   * for the log.
   */
  async start(): Promise<{ adopted: number; retired: number }> {
    const link = await this.#connect()
    const held = new Map(link.held.map((pty) => [keyOf(pty.sessionId, pty.terminalId), pty]))
    const store = this.#options.store
    const gone: TerminalRow[] = []
    let adopted = 0
    for (const row of await store.unretired(this.generation)) {
      const key = keyOf(row.sessionId, row.id)
      const pty = held.get(key)
      held.delete(key)
      if (pty && row.state !== 'closed') {
        await this.#adopt(row, pty)
        adopted++
      } else if (pty) {
        await this.#discard(link, pty.id, key, 'its close was under way') // a sidecar died mid-close
        gone.push(row)
      } else if (!heldElsewhere(row)) {
        gone.push(row)
      }
    }
    for (const { state, error } of link.unreadable) {
      const key = keyOf(state.sessionId, state.terminalId)
      console.error(`termkeep sidecar: the journal of ${key} cannot be read (${error.message}); closing it`)
      await this.#discard(link, state.id, key, 'its journal cannot be read')
      const row = await store.get(state.sessionId, state.terminalId)
      if (row && row.state !== 'retired') gone.push(row)
    }
    for (const [key, pty] of held) {
      const row = await store.get(pty.sessionId, pty.terminalId)
      if (row) await this.#discard(link, pty.id, key, 'it was retired')
      else
        console.error(`termkeep sidecar: the keeper holds ${key}, which this database does not know (another DATABASE_URL?); left running`)
    }
    await this.#sweep(link, gone)
    await store.retire(gone)
    // Adopted terminals are of this generation now: only commands of terminals gone stay running.
    await this.#options.commands?.endAbandoned(this.generation)
    // Spools of releases before the keeper (the keeper keeps journals in its own directory now).
    removeSpoolTree(join(this.#options.dataDir, 'spool'))
    // Nonce files a shell never took (an adopted one took its own long ago). Integration scripts
    // are small and regular: a plain recursive remove (never follows a link) is enough.
    rmSync(join(this.#options.dataDir, 'shell-integration'), { recursive: true, force: true })
    return { adopted, retired: gone.length }
  }

  /** Kills what the retired rows' terminals left running, proven theirs by the keeper. */
  async #sweep(link: KeeperLink, rows: readonly TerminalRow[]): Promise<void> {
    const targets = rows.flatMap((r): SweepTarget[] =>
      r.leaderPid !== null && r.leaderStartTicks !== null && r.bootId !== null
        ? [{ sessionId: r.sessionId, id: r.id, leaderPid: r.leaderPid, leaderStartTicks: r.leaderStartTicks, bootId: r.bootId }]
        : [],
    )
    if (targets.length === 0) return
    const { killed, survivors } = await link.sweep(targets)
    const entries = Object.entries(killed)
    if (entries.length > 0) {
      const list = entries.map(([terminal, pids]) => `${terminal}: ${pids.join(' ')}`).join('; ')
      const count = entries.reduce((n, [, pids]) => n + pids.length, 0)
      console.error(
        `termkeep sidecar: killed ${count} process(es) an earlier keeper left running in ${entries.length} terminal(s) (${list})`,
      )
    }
    if (survivors.length > 0) console.error(`termkeep sidecar: processes of earlier terminals survived SIGKILL: ${survivors.join(' ')}`)
  }

  async #discard(link: KeeperLink, id: number, key: string, why: string): Promise<void> {
    const survivors = await link.discard(id, CLOSE_KILL_GRACE_MS).catch((error: unknown) => {
      console.error(`termkeep sidecar: closing ${key} in the keeper (${why}) failed`, error)
      return []
    })
    if (survivors.length > 0) console.error(`termkeep sidecar: closing ${key} (${why}): processes survived SIGKILL: ${survivors.join(' ')}`)
  }

  /** Takes on a terminal the keeper kept while no sidecar (or an earlier one) ran. */
  async #adopt(row: TerminalRow, pty: KeptPty): Promise<void> {
    const { store, emulators } = this.#options
    await store.adopt(row.sessionId, row.id, this.generation)
    const key = keyOf(row.sessionId, row.id)
    const settled = await this.#options.settled?.(row.sessionId, row.id)
    const info = terminalInfoOf(row)
    const terminal = new LiveTerminal({
      sessionId: row.sessionId,
      id: row.id,
      title: row.title,
      shell: info.shell,
      cwd: row.cwd,
      geometry: { cols: pty.cols, rows: pty.rows },
      hostGeneration: this.generation,
      createdAt: row.createdAt,
      journal: pty.journal,
      emulator: emulators.open(key, pty.journal, settled),
      store,
      workflow: info.workflow,
      name: info.name,
      commandMarks: info.commandMarks,
    })
    // The marks are read again from the journal's start: the same records come out (their writes
    // are idempotent), and a command that ran on meanwhile is followed to its end.
    const nonce = info.commandMarks === 'injected' ? this.#nonceOf(row.sessionId, row.id, row.createdAt) : undefined
    this.#track(terminal, nonce)
    this.#live.set(key, terminal)
    terminal.started(pty)
  }

  /** The terminal's command tracker (sidecar/commands/), when this host keeps command records. */
  #track(terminal: LiveTerminal, nonce: string | undefined): void {
    terminal.markNonce = nonce
    const commands = this.#options.commands
    if (!commands) return
    terminal.commands = new CommandTracker({
      sessionId: terminal.sessionId,
      terminalId: terminal.id,
      journal: terminal.journal,
      store: commands,
      nonce,
      onDetected: () => terminal.marksDetected(),
    })
  }

  /** The link to the keeper: connected, its end watched. */
  #connect(): Promise<KeeperLink> {
    const linking = this.#options.keeper().then(async (client) => {
      const link = await KeeperLink.open(client, (end) => this.#linkEnded(linking, end))
      this.keeper = link.keeper
      return link
    })
    this.#link = linking
    return linking
  }

  /** The keeper ended: its terminals went with it (the seed contract: they retire, their settled
   * screens stay). A new keeper is started for what comes next; it kills what the old one's
   * terminals left running. A connection lost to a keeper that still runs is the sidecar's end. */
  #linkEnded(linking: Promise<KeeperLink>, end: LinkEnd): void {
    if (this.#stopping || this.#link !== linking) return
    if (!end.keeperEnded) return this.#options.linkBroken?.(end.error)
    const lost = [...this.#live.values()].filter((t) => t.state !== 'retired')
    console.error(`termkeep sidecar: the keeper ended; its ${lost.length} terminal(s) are retired`)
    for (const terminal of lost) {
      this.#live.delete(keyOf(terminal.sessionId, terminal.id))
      terminal.lost()
    }
    // A command still running ended with the journal: its record is written before a stop.
    const written = lost.map(async (terminal) => {
      await terminal.flushed()
      await terminal.commands?.done
      await terminal.commands?.flushed()
    })
    this.#retiring = Promise.all([this.#retiring, ...written])
    this.#connect().catch((error: unknown) => console.error('termkeep sidecar: starting a new keeper failed', error))
  }

  /** The session ids (their shells' pids) of the terminals running here: what a terminal's
   * program started, unless it left the terminal on purpose, is in one of them. */
  liveSessions(): Set<number> {
    const sessions = new Set<number>()
    for (const terminal of this.#live.values()) if (terminal.state === 'running' && terminal.processId) sessions.add(terminal.processId)
    return sessions
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

  /**
   * This sidecar stops: every terminal goes on in the keeper (each screen is settled a last time,
   * each row gets its last changes), and the next sidecar adopts them. Resolves with how many
   * still run.
   */
  async detach(): Promise<number> {
    this.#stopping = true
    clearInterval(this.#idleTimer)
    const terminals = [...this.#live.values()]
    this.#live.clear()
    await Promise.all([this.#retiring, ...terminals.map((terminal) => terminal.leave())])
    const link = await this.#link?.catch(() => undefined)
    link?.close()
    return terminals.filter((t) => t.state === 'running').length
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
    const spawn = this.#spawnSpec(sessionId, id, launch, createdAt)
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
    const options = { ...spawn.spec, cwd, cols: geometry.cols, rows: geometry.rows }
    let pty: KeptPty | undefined
    let failure: string | undefined
    try {
      const link = await this.#keeperLink()
      pty = await link.spawn(sessionId, id, options)
    } catch (error) {
      failure = (error as Error).message
    } finally {
      spawn.spawned()
    }
    // A program that could not start is an exited terminal with its error and an empty journal.
    const journal = pty?.journal ?? new Journal(undefined, geometry)
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
      emulator: emulators.open(keyOf(sessionId, id), journal),
      store,
      workflow,
      name: launch.name,
      commandMarks: spawn.commandMarks,
    })
    this.#track(terminal, spawn.commandMarks === 'injected' ? spawn.nonce : undefined)
    this.#live.set(keyOf(sessionId, id), terminal)
    if (!pty) {
      const error = terminal.failed(failure ?? 'unknown')
      await terminal.flushed()
      throw error
    }
    terminal.started(pty)
    await terminal.persisted()
    return terminal
  }

  /** The keeper's link for a new terminal (waiting while a new keeper starts). */
  async #keeperLink(): Promise<KeeperLink> {
    if (this.#stopping || !this.#link) throw new Error('the sidecar is stopping')
    return this.#link
  }

  /**
   * What the PTY is spawned with: the program, the environment every terminal gets, and for an
   * interactive bash, zsh or fish the shell integration, whose nonce goes in a file of its own
   * (0600 in a 0700 directory) that the shell reads and deletes (sidecar/commands/integration.ts).
   */
  #spawnSpec(sessionId: string, id: string, launch: Launch, createdAt: number) {
    const spec = { file: launch.shell.path, args: launch.shell.args, env: { ...this.#env(sessionId, id), ...launch.env } }
    const plain = { spec, commandMarks: 'none' as const, nonce: undefined, spawned: () => {}, discard: () => {} }
    if (!launch.integrate) return plain
    // Absolute: the shell reads it from its own cwd, and the default data directory is ./data.
    const dir = resolve(this.#options.dataDir, 'shell-integration')
    const nonceFile = join(dir, randomBytes(16).toString('hex'))
    const integrated = withShellIntegration(spec, nonceFile)
    if (integrated.commandMarks !== 'injected') return plain
    const nonce = this.#nonceOf(sessionId, id, createdAt)
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    writeFileSync(nonceFile, `${nonce}\n`, { mode: 0o600, flag: 'wx' })
    const discard = () => rmSync(nonceFile, { force: true })
    const spawned = () => setTimeout(discard, NONCE_FILE_LIFETIME_MS).unref()
    return { ...integrated, nonce, spawned, discard }
  }

  /**
   * A terminal's shell-integration nonce, derived from the sidecar's secret and what names the
   * terminal for good (an id is never created again in its session), so that a sidecar adopting
   * the terminal after a restart tells its marks again.
   */
  #nonceOf(sessionId: string, id: string, createdAt: number): string {
    return createHmac('sha256', this.#nonceKey).update(`shell-integration\0${sessionId}\0${id}\0${createdAt}`).digest('hex').slice(0, 32)
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
/** A row of a terminal whose shell still runs as the child of another data directory's keeper
 * (another sidecar on this database): neither retired nor swept here. */
function heldElsewhere(row: TerminalRow): boolean {
  if (row.leaderPid === null || row.leaderStartTicks === null) return false
  const leader = processStat(row.leaderPid)
  if (!leader || leader.zombie || leader.startTicks !== row.leaderStartTicks) return false
  return isHolder(leader.ppid, KEEPER_ENTRY)
}

const unavailable = (id: string) =>
  new TermkeepError('terminal/unavailable', `terminal ${id} is no longer live (closed, or its keeper ended)`, {
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
