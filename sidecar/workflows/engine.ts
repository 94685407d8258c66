/**
 * The workflow engine of one sidecar generation: starts runs (after every check that can refuse
 * one, so a refused request publishes nothing: no run, no event, no terminal), cancels them, and
 * at start marks the runs an earlier generation left running as interrupted (their script
 * processes are killed if they somehow survived; their members' terminals live on in the keeper,
 * adopted like every other terminal).
 */
import { rmSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { TermkeepError } from '../../schema/errors.ts'
import { MAX_RUNNING_WORKFLOWS, MAX_RUNNING_WORKFLOWS_PER_SESSION, MAX_RUNNING_WORKFLOWS_PER_TOKEN } from '../../schema/limits.ts'
import type { WorkflowsHealth } from '../../schema/wire/health.ts'
import { startedAs, type StartWorkflow } from '../../schema/wire/workflows.ts'
import { randomId } from '../../common/crypto.ts'
import type { TerminalStore } from '../../storage/terminals.ts'
import { USER_HZ } from '../observation/proc.ts'
import { bootId, ticksSinceBoot } from '../../local/proc.ts'
import type { TerminalHost } from '../terminals/host.ts'
import { endRunProcesses } from './leftovers.ts'
import { killIfSame } from './process.ts'
import type { Profiles } from './profiles.ts'
import type { WorkflowReader } from './read-text.ts'
import { WorkflowRun } from './run.ts'
import type { RunStore } from './run-log.ts'
import type { SandboxState } from './sandbox.ts'

export interface EngineDeps {
  host: TerminalHost
  terminals: TerminalStore
  profiles: Profiles
  store: RunStore
  reader: WorkflowReader
  generation: number
  dataDir: string
  /** Whether and how scripts run here (established once per sidecar, while it starts serving:
   * sandbox.ts). A start waits for it; health leaves it out until it is known. */
  sandbox: Promise<SandboxState>
}

/** A run alive or starting, as the limits on live runs count it. */
interface Place {
  sessionId: string
  tokenId: string
}

export class WorkflowEngine {
  readonly #deps: EngineDeps
  readonly #runs = new Map<string, WorkflowRun>()
  /** Starts past their checks and not yet registered: they count against the limits too. */
  readonly #starting = new Set<Place>()
  /** The last start under each Idempotency-Key (session, token, key) still going: never rejects. */
  readonly #keyed = new Map<string, Promise<unknown>>()
  #stopping = false
  #sandbox: SandboxState | undefined

  constructor(deps: EngineDeps) {
    this.#deps = deps
    void deps.sandbox.then((state) => (this.#sandbox = state))
  }

  /** Absolute: a relative data directory (the default `./data`) is the sidecar's, not the agents'. */
  get #resultRoot(): string {
    return resolve(this.#deps.dataDir, 'workflows')
  }

  /** Undefined while the sandbox is still being established. */
  health(): WorkflowsHealth | undefined {
    return this.#sandbox?.health
  }

  /**
   * At sidecar start: earlier generations' running runs are interrupted; a script process that
   * survived is killed, and so is what their members left running outside their terminals.
   */
  async start(): Promise<void> {
    const orphans = await this.#deps.store.interruptEarlier(this.#deps.generation)
    const now = { ms: Date.now(), ticks: ticksSinceBoot() ?? 0 }
    for (const { id, sessionId, createdAt, pid, pidStartTicks } of orphans) {
      if (pid !== null && pidStartTicks !== null && killIfSame(pid, pidStartTicks)) {
        console.error(`termkeep sidecar: killed run ${id}'s script process ${pid}, left by an earlier sidecar`)
      }
      // Its start in clock ticks, a second early: the clock and the tick count are read apart.
      const startTicks = Math.max(0, now.ticks - Math.ceil(((now.ms - createdAt) / 1000 + 1) * USER_HZ))
      // Its members' terminals run on in the keeper (adopted): only what left them is ended.
      const live = this.#deps.host.liveSessions()
      const left = await endRunProcesses({ runId: id, sessionId, startTicks, bootId: bootId() }, undefined, (p) => live.has(p.session))
      if (left.length > 0) console.error(`termkeep sidecar: run ${id}: processes ${left.join(', ')} outlived it`)
    }
    rmSync(this.#resultRoot, { recursive: true, force: true })
  }

  /**
   * Starts a run and resolves with its id. With an Idempotency-Key, a start that repeats an earlier
   * one under the key answers that run instead (`created: false`; another request under the key
   * is a 422). Starts under one key run one after the other: a retry that arrives while its first
   * attempt is still starting (a stalled sidecar resuming with both in hand) waits, then finds it.
   */
  startRun(sessionId: string, request: StartWorkflow, tokenId: string, key?: string): Promise<{ runId: string; created: boolean }> {
    const start = async () => {
      const runId = key === undefined ? undefined : await this.#deps.store.repeatedStart(sessionId, tokenId, key, request)
      if (runId !== undefined) return { runId, created: false }
      return { runId: await this.#startNew(sessionId, request, tokenId, key ?? null), created: true }
    }
    if (key === undefined) return start()
    const id = JSON.stringify([sessionId, tokenId, key])
    const started = (this.#keyed.get(id) ?? Promise.resolve()).then(start)
    const settled = started.catch(() => undefined)
    this.#keyed.set(id, settled)
    void settled.then(() => this.#keyed.get(id) === settled && this.#keyed.delete(id))
    return started
  }

  /** Every refusal comes before anything is written. */
  async #startNew(sessionId: string, request: StartWorkflow, tokenId: string, key: string | null): Promise<string> {
    if (this.#stopping) throw new TermkeepError('sidecar/unavailable', 'the sidecar is stopping')
    const state = await this.#deps.sandbox
    if (!state.ready) throw new TermkeepError('workflow/unavailable', `workflow runs cannot start on this server: ${state.health.reason}`)
    this.#checkPlaces(sessionId, tokenId)
    const problem = await state.checker.problem(request.script)
    if (problem) throw new TermkeepError('workflow/invalid-script', problem)
    const { profiles } = this.#deps
    if (request.profile !== undefined && !profiles.get(request.profile)) {
      const configured = profiles.names.length > 0 ? profiles.names.join(', ') : 'none: the sidecar has no TERMKEEP_AGENTS'
      throw new TermkeepError('workflow/unknown-profile', `no agent profile "${request.profile}" (configured: ${configured})`, {
        profile: request.profile,
      })
    }
    // Checked again: another start may have taken the place while this one was parsed.
    this.#checkPlaces(sessionId, tokenId)
    const place = { sessionId, tokenId }
    this.#starting.add(place)
    try {
      return await this.#start(sessionId, request, tokenId, key)
    } finally {
      this.#starting.delete(place)
    }
  }

  /** A 409 naming whose limit is reached (the session's, the token's, the server's) and how to free a place. */
  #checkPlaces(sessionId: string, tokenId: string): void {
    const live: Place[] = [...this.#runs.values(), ...this.#starting]
    const session = live.filter((place) => place.sessionId === sessionId).length
    if (session >= MAX_RUNNING_WORKFLOWS_PER_SESSION) {
      throw limitReached(
        'session',
        MAX_RUNNING_WORKFLOWS_PER_SESSION,
        session,
        `session ${sessionId} has ${session} runs alive, at most ${MAX_RUNNING_WORKFLOWS_PER_SESSION} per session; cancel one (GET /v1/sessions/${sessionId}/workflows lists them, POST …/workflows/<run>/cancel) or wait for one to end`,
      )
    }
    const mine = live.filter((place) => place.tokenId === tokenId)
    if (mine.length >= MAX_RUNNING_WORKFLOWS_PER_TOKEN) {
      const sessions = [...new Set(mine.map((place) => place.sessionId))].sort()
      throw limitReached(
        'token',
        MAX_RUNNING_WORKFLOWS_PER_TOKEN,
        mine.length,
        `this token has ${mine.length} runs alive (in session ${sessions.join(', ')}), at most ${MAX_RUNNING_WORKFLOWS_PER_TOKEN} per token; cancel one of them (POST /v1/sessions/<session>/workflows/<run>/cancel) or wait for one to end`,
        { sessions },
      )
    }
    if (live.length >= MAX_RUNNING_WORKFLOWS) {
      throw limitReached(
        'server',
        MAX_RUNNING_WORKFLOWS,
        live.length,
        `the server has ${live.length} runs alive, at most ${MAX_RUNNING_WORKFLOWS}; wait for one to end (runs of other sessions are not yours to cancel)`,
      )
    }
  }

  async #start(sessionId: string, request: StartWorkflow, tokenId: string, idempotencyKey: string | null): Promise<string> {
    const sessionCwd = await this.#deps.terminals.sessionCwd(sessionId)
    if (sessionCwd === undefined) throw new TermkeepError('session/not-found', `no session ${sessionId}`)
    const sandbox = await this.#deps.sandbox
    if (!sandbox.ready)
      throw new TermkeepError('workflow/unavailable', `workflow runs cannot start on this server: ${sandbox.health.reason}`)
    const id = randomId('wf')
    const asked = startedAs(request)
    const run = await WorkflowRun.start(
      {
        id,
        sessionId,
        sessionCwd,
        ...asked,
        input: asked.input ?? undefined,
        tokenId,
        idempotencyKey,
        resultDir: join(this.#resultRoot, id),
      },
      { ...this.#deps, sandbox: sandbox.sandbox },
    )
    this.#runs.set(id, run)
    void run.settled.then(() => this.#runs.delete(id))
    return id
  }

  /**
   * Cancels a live run and resolves once it settled; a run that already ended (or that an earlier
   * sidecar left) is answered as it is. Another session's run is not found.
   */
  async cancel(sessionId: string, runId: string, reason?: string): Promise<void> {
    const run = this.#runs.get(runId)
    if (run && run.sessionId === sessionId) return run.cancel(reason)
    if (!(await this.#deps.store.get(sessionId, runId)))
      throw new TermkeepError('workflow/not-found', `no workflow run ${runId} in session ${sessionId}`)
  }

  /** Sidecar shutdown: every live run's script process ends with the sidecar (the run reads as
   * interrupted after the restart); its members' terminals keep running in the keeper. */
  async shutdown(): Promise<void> {
    this.#stopping = true
    await Promise.all([...this.#runs.values()].map((run) => run.abandon()))
  }
}

function limitReached(scope: 'session' | 'token' | 'server', limit: number, running: number, message: string, more = {}): TermkeepError {
  return new TermkeepError('workflow/limit-reached', message, { scope, limit, running, ...more })
}
