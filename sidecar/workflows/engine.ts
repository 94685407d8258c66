/**
 * The workflow engine of one sidecar generation: starts runs (after every check that can refuse
 * one, so a refused request publishes nothing: no run, no event, no terminal), cancels them, and
 * at start marks the runs an earlier generation left running as interrupted (their script
 * processes are killed if they somehow survived; their members' terminals live on in the keeper,
 * adopted like every other terminal).
 */
import { rmSync } from 'node:fs'
import { join } from 'node:path'
import vm from 'node:vm'
import { TermkeepError } from '../../schema/errors.ts'
import { MAX_RUNNING_WORKFLOWS } from '../../schema/limits.ts'
import { startedAs, type StartWorkflow } from '../../schema/wire/workflows.ts'
import { randomId } from '../../api/auth/secrets.ts'
import type { TerminalHost } from '../terminals/host.ts'
import type { TerminalStore } from '../terminals/store.ts'
import { killIfSame, type Sandbox } from './process.ts'
import type { Profiles } from './profiles.ts'
import type { WorkflowReader } from './read-text.ts'
import { WorkflowRun } from './run.ts'
import type { RunStore } from './store.ts'

export interface EngineDeps {
  host: TerminalHost
  terminals: TerminalStore
  profiles: Profiles
  store: RunStore
  reader: WorkflowReader
  generation: number
  dataDir: string
  /** How script processes are confined by the OS (probed once per sidecar: process.ts). */
  sandbox: Sandbox
}

const AsyncFunction = (async () => {}).constructor as new (body: string) => unknown

/** Pure-ish: why the script does not parse, with its line when V8 tells; undefined when it does. */
export function scriptProblem(script: string): string | undefined {
  try {
    // Compiles the body only (the Function constructor parses it on its own, so a body cannot
    // close the function and continue outside it); nothing runs.
    new AsyncFunction(script)
    return undefined
  } catch (error) {
    if (!(error instanceof SyntaxError)) throw error
    let line = ''
    try {
      new vm.Script(`(async function () {\n${script}\n})`, { filename: 'script' })
    } catch (again) {
      const at = /^script:(\d+)/.exec(String((again as Error).stack))
      const number = at ? Number(at[1]) - 1 : 0
      if (number > script.split('\n').length) line = ' (at the end of the script)'
      else if (number > 0) line = ` (line ${number})`
    }
    return `the script does not parse: ${error.message}${line}`
  }
}

export class WorkflowEngine {
  readonly #deps: EngineDeps
  readonly #runs = new Map<string, WorkflowRun>()
  /** Starts past their checks and not yet registered: they count against MAX_RUNNING_WORKFLOWS. */
  #starting = 0
  /** The last start under each Idempotency-Key (session, token, key) still going: never rejects. */
  readonly #keyed = new Map<string, Promise<unknown>>()
  #stopping = false

  constructor(deps: EngineDeps) {
    this.#deps = deps
  }

  get #resultRoot(): string {
    return join(this.#deps.dataDir, 'workflows')
  }

  /** At sidecar start: earlier generations' running runs are interrupted. */
  async start(): Promise<void> {
    const orphans = await this.#deps.store.interruptEarlier(this.#deps.generation)
    for (const { id, pid, pidStartTicks } of orphans) {
      if (pid !== null && pidStartTicks !== null && killIfSame(pid, pidStartTicks)) {
        console.error(`termkeep sidecar: killed run ${id}'s script process ${pid}, left by an earlier sidecar`)
      }
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
    if (this.#runs.size + this.#starting >= MAX_RUNNING_WORKFLOWS) {
      throw new TermkeepError('workflow/limit-reached', `at most ${MAX_RUNNING_WORKFLOWS} runs at once on this host; wait for one to end`, {
        limit: MAX_RUNNING_WORKFLOWS,
      })
    }
    const problem = scriptProblem(request.script)
    if (problem) throw new TermkeepError('workflow/invalid-script', problem)
    const { profiles } = this.#deps
    if (request.profile !== undefined && !profiles.get(request.profile)) {
      const configured = profiles.names.length > 0 ? profiles.names.join(', ') : 'none: the sidecar has no TERMKEEP_AGENTS'
      throw new TermkeepError('workflow/unknown-profile', `no agent profile "${request.profile}" (configured: ${configured})`, {
        profile: request.profile,
      })
    }
    this.#starting++
    try {
      return await this.#start(sessionId, request, tokenId, key)
    } finally {
      this.#starting--
    }
  }

  async #start(sessionId: string, request: StartWorkflow, tokenId: string, idempotencyKey: string | null): Promise<string> {
    const sessionCwd = await this.#deps.terminals.sessionCwd(sessionId)
    if (sessionCwd === undefined) throw new TermkeepError('session/not-found', `no session ${sessionId}`)
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
      this.#deps,
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
