/**
 * One workflow run in this sidecar: its script process, its members and its event log. The run
 * settles exactly once, on the first of: the script's result (completed or error), a limit
 * running out (its wall-clock time here; the script's CPU time and memory in the engine, with the
 * sidecar's own measure behind them: usage.ts), the script process dying, or a cancel. Settling
 * kills the script process at once (with the agent() and readText() calls still waiting in it for
 * a place), drops queued agent() calls, cancels every open member (closing its terminal, whose
 * processes are killed, and logging its `agent-end` as `cancelled`), ends whatever the members
 * left running outside their terminals (leftovers.ts), and only then logs `workflow/end`. Members
 * take concurrency slots in FIFO order. Everything the script process sends is validated here,
 * and it may have only so many calls out here at once (protocol.ts).
 */
import { mkdirSync, rmSync } from 'node:fs'
import * as v from 'valibot'
import { TermkeepError } from '../../schema/errors.ts'
import {
  AGENT_LABEL_DEFAULT_CHARS,
  MAX_AGENT_LABEL_CHARS,
  MAX_AGENT_PROMPT_BYTES,
  MAX_AGENTS_PER_RUN,
  MAX_WORKFLOW_ERROR_BYTES,
  MAX_WORKFLOW_LOG_BYTES,
  MAX_WORKFLOW_LOG_MESSAGE_BYTES,
  MAX_WORKFLOW_LOG_MESSAGES,
  MAX_WORKFLOW_RESULT_BYTES,
  MAX_WORKFLOW_RESULT_DEPTH,
  WORKFLOW_SCRIPT_HEAP_MB,
  WORKFLOW_SCRIPT_MEMORY_BYTES,
} from '../../schema/limits.ts'
import { titleFrom, titleSchema } from '../../schema/wire/common.ts'
import type { RunLimit } from '../../schema/wire/workflows.ts'
import { bootId, processStat, ticksSinceBoot } from '../../local/proc.ts'
import type { TerminalHost } from '../terminals/host.ts'
import { ProtocolViolation } from './channel.ts'
import { nestsDeeper, within } from './host-checks.ts'
import { promptProblem } from './prompt.ts'
import { endRunProcesses, type RunIdentity } from './leftovers.ts'
import { Member, type MemberOutcome } from './member.ts'
import { ScriptProcess, type Sandbox, type ScriptExit } from './process.ts'
import type { Profiles } from './profiles.ts'
import { FromScript, type HookError } from './protocol.ts'
import type { WorkflowReader } from './read-text.ts'
import type { ReadTextPage } from '../../schema/wire/files.ts'
import type { Ending, RunLog, RunStore } from './run-log.ts'
import { engineLimits, SCRIPT_LIMITS } from './script-limits.ts'
import { WORKFLOW_CPU_BACKSTOP_GRACE_MS, WORKFLOW_PROCESS_MEMORY_SLACK_BYTES, WORKFLOW_READS_IN_FLIGHT } from './tuning.ts'
import { watchUsage } from './usage.ts'

export interface RunDeps {
  host: TerminalHost
  profiles: Profiles
  store: RunStore
  reader: WorkflowReader
  generation: number
  sandbox: Sandbox
}

export interface RunSpec {
  id: string
  sessionId: string
  sessionCwd: string
  script: string
  /** JSON text, or undefined when the run has no input. */
  input: string | undefined
  concurrency: number
  profile: string | null
  tokenId: string
  /** The start's Idempotency-Key, kept on the run's row. */
  idempotencyKey: string | null
  /** Absolute: agents run in the session's directory and are told paths in it. */
  resultDir: string
  wallTimeLimitMs: number
  cpuTimeLimitMs: number
}

/** Why a limit ended the run, as its result's `error` says it (the `limit` field names it). */
function limitError(limit: RunLimit, spec: RunSpec, detail?: string): string {
  const seconds = (ms: number) => `${ms / 1000} s`
  if (limit === 'wall-time') return `WALL_TIME_LIMIT: the run reached its wall-clock limit of ${seconds(spec.wallTimeLimitMs)}`
  if (limit === 'cpu-time')
    return `CPU_TIME_LIMIT: the script used its CPU time limit of ${seconds(spec.cpuTimeLimitMs)}${detail ? ` (${detail})` : ''}`
  return `MEMORY_LIMIT: the script ran out of its ${WORKFLOW_SCRIPT_MEMORY_BYTES / 1024 / 1024} MiB of memory${detail ? `: ${detail}` : ''}`
}

const Label = titleSchema(MAX_AGENT_LABEL_CHARS, 'agent labels')
const bytes = (text: string) => Buffer.byteLength(text)
const fatal = (code: string, message: string): HookError => ({ code, message, fatal: true })

export class WorkflowRun {
  readonly id: string
  readonly sessionId: string
  readonly settled: Promise<void>
  readonly #spec: RunSpec
  readonly #deps: RunDeps
  readonly #log: RunLog
  #process!: ScriptProcess
  #settling = false
  readonly #identity: RunIdentity
  /** Stops the wall-clock timer and the usage watch. */
  #unwatch: () => void = () => {}
  #markSettled!: () => void
  /** Accepted agent() calls (the host-observed count), and those waiting for a slot. */
  #accepted = 0
  /** The first fatal error the host answered a call with: the run is doomed (see guest.ts), and
   * the host holds it to that on its own, whatever the script process says afterwards. */
  #doom: HookError | undefined
  readonly #queue: { member: Member; call: number }[] = []
  readonly #started = new Set<Member>()
  #active = 0
  #logBytes = 0
  #logCount = 0
  /** agent() and readText() calls the script process has out here (received, not yet answered). */
  #agentsOut = 0
  #readsOut = 0
  /** The sidecar's time serving the run's readText() calls (while any is out): it counts against
   * the run's CPU time, since the script spends almost none of its own waiting for them. */
  #readingMs = 0
  #readingSince: number | undefined

  private constructor(spec: RunSpec, deps: RunDeps) {
    this.id = spec.id
    this.sessionId = spec.sessionId
    this.#spec = spec
    this.#deps = deps
    this.#log = deps.store.log(spec.id)
    this.settled = new Promise((resolve) => (this.#markSettled = resolve))
    this.#identity = { runId: spec.id, sessionId: spec.sessionId, startTicks: ticksSinceBoot() ?? 0, bootId: bootId() }
  }

  get tokenId(): string {
    return this.#spec.tokenId
  }

  /** Writes the run and its start event, then starts the script process. */
  static async start(spec: RunSpec, deps: RunDeps): Promise<WorkflowRun> {
    const run = new WorkflowRun(spec, deps)
    const now = Date.now()
    await run.#log.begin(
      {
        id: spec.id,
        sessionId: spec.sessionId,
        status: 'running',
        script: spec.script,
        input: spec.input ?? null,
        concurrency: spec.concurrency,
        profile: spec.profile,
        wallTimeLimitMs: spec.wallTimeLimitMs,
        cpuTimeLimitMs: spec.cpuTimeLimitMs,
        tokenId: spec.tokenId,
        idempotencyKey: spec.idempotencyKey,
        hostGeneration: deps.generation,
        lastSequence: 1,
        createdAt: now,
        updatedAt: now,
      },
      { run: { id: spec.id, sessionId: spec.sessionId, concurrency: spec.concurrency, profile: spec.profile }, at: now },
    )
    mkdirSync(spec.resultDir, { recursive: true, mode: 0o700 })
    run.#launch()
    return run
  }

  #launch(): void {
    const { profiles } = this.#deps
    const start = {
      script: this.#spec.script,
      input: this.#spec.input,
      profiles: profiles.names,
      defaultProfile: profiles.fallback(this.#spec.profile) ?? null,
      concurrency: this.#spec.concurrency,
      limits: SCRIPT_LIMITS,
      engine: engineLimits(this.#spec.cpuTimeLimitMs),
    }
    this.#process = new ScriptProcess(start, (message) => this.#receive(message), this.#deps.sandbox)
    const pid = this.#process.pid
    const wall = setTimeout(() => this.#limitReached('wall-time'), this.#spec.wallTimeLimitMs)
    let stopWatch = () => {}
    if (pid !== undefined) {
      void this.#deps.store
        .setProcess(this.id, pid, processStat(pid)?.startTicks)
        .catch((error: unknown) => console.error(`termkeep sidecar: recording run ${this.id}'s process`, error))
      const bounds = {
        cpuMs: this.#spec.cpuTimeLimitMs + WORKFLOW_CPU_BACKSTOP_GRACE_MS,
        rssBytes: WORKFLOW_SCRIPT_MEMORY_BYTES + WORKFLOW_PROCESS_MEMORY_SLACK_BYTES,
      }
      const reading = () => this.#readingMs + (this.#readingSince === undefined ? 0 : performance.now() - this.#readingSince)
      stopWatch = watchUsage(
        pid,
        bounds,
        (limit, usage) => {
          if (limit === 'memory') return this.#limitReached(limit, `the sidecar measured ${usage.rssBytes} bytes resident`)
          this.#limitReached(limit, `with the sidecar's time serving its readText() calls: ${Math.round(reading())} ms`)
        },
        undefined,
        reading,
      )
    }
    this.#unwatch = () => {
      clearTimeout(wall)
      stopWatch()
    }
    void this.#process.exited.then((exit) => this.#exited(exit))
  }

  #limitReached(limit: RunLimit, detail?: string): void {
    const error = limitError(limit, this.#spec, detail)
    void this.#settle({ status: 'error', result: { stopReason: 'error', error, limit, agentsStarted: this.#accepted } })
  }

  /** Cancels the run (the first reason wins) and resolves once it settled, cleanup included. */
  async cancel(reason?: string): Promise<void> {
    const error = reason ? `cancelled: ${reason}` : 'cancelled'
    await this.#settle({
      status: 'cancelled',
      result: { stopReason: 'cancelled', error, agentsStarted: this.#accepted },
      cancelReason: reason,
    })
  }

  /**
   * The sidecar stops: the script process dies with it, nothing more is logged (the run reads as
   * interrupted after the restart, as after a crash), and its members' terminals go on in the
   * keeper.
   */
  async abandon(): Promise<void> {
    if (this.#settling) return
    this.#settling = true
    this.#process.kill()
    this.#queue.length = 0
    await this.#process.exited
  }

  #receive(raw: unknown): void {
    if (this.#settling) return
    if (raw instanceof ProtocolViolation) return this.#fail(raw.message)
    const parsed = v.safeParse(FromScript, raw)
    if (!parsed.success) return this.#fail('the script process sent a malformed message')
    const message = parsed.output
    switch (message.type) {
      case 'agent':
        return this.#agent(message)
      case 'read-text':
        return void this.#readText(message.call, message.request)
      case 'log':
        return this.#logMessage(message.message)
      case 'done':
        return this.#done(message)
    }
  }

  #agent(message: Extract<FromScript, { type: 'agent' }>): void {
    if (++this.#agentsOut > this.#spec.concurrency) {
      return this.#fail(`the script process sent more agent() calls at once than the run's concurrency (${this.#spec.concurrency})`)
    }
    const checked: { error: HookError } | { label?: string } = this.#doom ? { error: this.#doom } : this.#checkAgent(message)
    if ('error' in checked) return this.#answerAgent(message.call, { error: this.#doomed(checked.error) })
    const profileName = message.profile!
    const label = checked.label ?? titleFrom(message.prompt.split('\n')[0], AGENT_LABEL_DEFAULT_CHARS, `agent ${this.#accepted + 1}`)
    const seq = ++this.#accepted
    const { id: runId, sessionId, sessionCwd, resultDir } = this.#spec
    const spec = {
      runId,
      sessionId,
      sessionCwd,
      seq,
      prompt: message.prompt,
      label,
      profileName,
      profile: this.#deps.profiles.get(profileName)!,
      resultDir,
    }
    this.#queue.push({ member: new Member(spec, this.#deps.host, this.#log), call: message.call })
    this.#pump()
  }

  /** The host's own check of an agent() call (the script process checked it too, unless it lies). */
  #checkAgent({ prompt, label, profile }: Extract<FromScript, { type: 'agent' }>): { error: HookError } | { label?: string } {
    const problem = this.#agentProblem(prompt, profile)
    if (problem) return { error: problem }
    if (label === undefined) return {}
    const parsed = v.safeParse(Label, label)
    if (!parsed.success) return { error: fatal('INVALID_ARGUMENT', `agent() option "label": ${parsed.issues[0].message}`) }
    return { label: parsed.output }
  }

  #agentProblem(prompt: string, profile: string | undefined): HookError | undefined {
    if (prompt.trim() === '') return fatal('INVALID_ARGUMENT', 'agent(prompt) needs a non-empty prompt')
    if (bytes(prompt) > MAX_AGENT_PROMPT_BYTES) return fatal('PROMPT_CAP', `a prompt is at most ${MAX_AGENT_PROMPT_BYTES} bytes`)
    const chosen = profile === undefined ? undefined : this.#deps.profiles.get(profile)
    if (!chosen)
      return fatal('UNKNOWN_PROFILE', `no agent profile "${profile}" (configured: ${this.#deps.profiles.names.join(', ') || 'none'})`)
    const problem = promptProblem(profile!, chosen, prompt)
    if (problem) return problem
    if (this.#accepted >= MAX_AGENTS_PER_RUN) return fatal('AGENT_CAP', `a run makes at most ${MAX_AGENTS_PER_RUN} agent() calls`)
    return undefined
  }

  /** Remembers the first fatal error the host answers with; returns it. */
  #doomed(error: HookError): HookError {
    if (error.fatal) this.#doom ??= error
    return error
  }

  /** Every agent() answer: the call's place is free before the script process hears of it. */
  #answerAgent(call: number, outcome: MemberOutcome): void {
    this.#agentsOut--
    if (!this.#settling) this.#process.send({ type: 'agent-result', call, ...outcome })
  }

  /** Starts queued members while slots are free, oldest first; none once the run is doomed. */
  #pump(): void {
    while (!this.#settling && this.#active < this.#spec.concurrency && this.#queue.length > 0) {
      const { member, call } = this.#queue.shift()!
      if (this.#doom) {
        this.#answerAgent(call, { error: this.#doom })
        continue
      }
      this.#active++
      this.#started.add(member)
      void member
        .start()
        .then((outcome) => {
          if ('error' in outcome) this.#doomed(outcome.error)
          this.#answerAgent(call, outcome)
        })
        .catch((error: unknown) => this.#fail(`agent ${member.seq} failed in the host: ${(error as Error).message}`, error))
        .finally(() => {
          this.#active--
          this.#pump()
        })
    }
  }

  async #readText(call: number, request: unknown): Promise<void> {
    if (++this.#readsOut > WORKFLOW_READS_IN_FLIGHT) {
      return this.#fail(`the script process sent more readText() calls at once than ${WORKFLOW_READS_IN_FLIGHT} (WORKFLOW_READS_IN_FLIGHT)`)
    }
    this.#readingSince ??= performance.now()
    const answer = await this.#readAnswer(request)
    if (--this.#readsOut === 0 && this.#readingSince !== undefined) {
      this.#readingMs += performance.now() - this.#readingSince
      this.#readingSince = undefined
    }
    if (!this.#settling) this.#process.send({ type: 'read-text-result', call, ...answer })
  }

  async #readAnswer(request: unknown): Promise<{ page: ReadTextPage } | { error: HookError }> {
    if (this.#doom) return { error: this.#doom }
    try {
      return { page: await this.#deps.reader.read({ sessionId: this.sessionId, tokenId: this.#spec.tokenId }, request) }
    } catch (error) {
      const known = error instanceof TermkeepError ? error : new TermkeepError('internal/error', 'readText failed in the host')
      if (!(error instanceof TermkeepError)) console.error(`termkeep sidecar: run ${this.id} readText`, error)
      const misuse = known.code === 'request/invalid'
      return { error: this.#doomed({ code: misuse ? 'INVALID_ARGUMENT' : known.code, message: known.message, fatal: misuse }) }
    }
  }

  #logMessage(message: string): void {
    const size = bytes(message)
    this.#logBytes += size
    this.#logCount++
    const over =
      size > MAX_WORKFLOW_LOG_MESSAGE_BYTES || this.#logBytes > MAX_WORKFLOW_LOG_BYTES || this.#logCount > MAX_WORKFLOW_LOG_MESSAGES
    if (over) return this.#fail(`LOG_CAP: a run logs at most ${MAX_WORKFLOW_LOG_MESSAGES} messages and ${MAX_WORKFLOW_LOG_BYTES} bytes`)
    this.#log.append('workflow/log', { message, at: Date.now() }).catch((error: unknown) => this.#fail('writing a log event failed', error))
  }

  #done(message: Extract<FromScript, { type: 'done' }>): void {
    // The host's own count: nothing the script process says changes it.
    const agentsStarted = this.#accepted
    if (this.#doom && message.stopReason === 'completed') return this.#fail(`${this.#doom.code}: ${this.#doom.message}`)
    if (message.limit) return this.#limitReached(message.limit, message.limit === 'memory' ? message.error : undefined)
    if (message.stopReason === 'error') {
      return void this.#settle({
        status: 'error',
        result: { stopReason: 'error', error: message.error ?? 'the script failed', agentsStarted },
      })
    }
    const json = message.value ?? 'null'
    if (bytes(json) > MAX_WORKFLOW_RESULT_BYTES)
      return this.#fail(`RESULT_CAP: the return value is at most ${MAX_WORKFLOW_RESULT_BYTES} bytes as JSON`)
    let value: unknown
    try {
      value = JSON.parse(json)
    } catch {
      return this.#fail('the script process sent a return value that is not JSON')
    }
    if (nestsDeeper(value, MAX_WORKFLOW_RESULT_DEPTH)) {
      return this.#fail(
        `RESULT_UNSERIALIZABLE: the return value is not plain JSON: it nests more than ${MAX_WORKFLOW_RESULT_DEPTH} arrays and objects`,
      )
    }
    void this.#settle({ status: 'completed', result: { stopReason: 'completed', value, agentsStarted } })
  }

  #exited(exit: ScriptExit): void {
    if (this.#settling) return
    const how = exit.error
      ? `could not start (${exit.error.message})`
      : exit.signal
        ? `was killed (${exit.signal})`
        : `exited with code ${exit.code}`
    // V8's own report (the host side's heap ran out) says why; a stack trace after it does not.
    const lines = this.#process.stderr.split('\n').filter((line) => line.trim() !== '')
    const fatal = lines.find((line) => /FATAL ERROR/.test(line))
    const heap = fatal && /heap/i.test(fatal) ? ` (the script process's own heap is limited to ${WORKFLOW_SCRIPT_HEAP_MB} MB)` : ''
    const why = fatal ?? lines.at(-1)
    this.#fail(`the script process ${how} before the script finished${why ? `: ${why.trim()}${heap}` : ''}`)
  }

  /** A termination path: the run ends `error` with the host-observed count. */
  #fail(error: string, cause?: unknown): void {
    if (cause !== undefined) console.error(`termkeep sidecar: run ${this.id}: ${error}`, cause)
    void this.#settle({ status: 'error', result: { stopReason: 'error', error, agentsStarted: this.#accepted } })
  }

  /** Settles the run once; never rejects (a rejection here would be nobody's to catch). */
  async #settle(ending: Ending): Promise<void> {
    if (this.#settling) return this.settled
    this.#settling = true
    // The script process's text is cut by the host too: it may not be the guest that wrote it.
    const { error } = ending.result
    if (error !== undefined) ending = { ...ending, result: { ...ending.result, error: within(error, MAX_WORKFLOW_ERROR_BYTES) } }
    try {
      await this.#cleanUp(ending)
    } catch (failure) {
      console.error(`termkeep sidecar: ending run ${this.id}`, failure)
    } finally {
      this.#markSettled()
    }
  }

  async #cleanUp(ending: Ending): Promise<void> {
    this.#unwatch()
    this.#process.kill()
    this.#queue.length = 0
    await Promise.all([...this.#started].map((member) => member.cancel()))
    const survivors = await endRunProcesses(this.#identity)
    if (survivors.length > 0) console.error(`termkeep sidecar: run ${this.id}: processes ${survivors.join(', ')} outlived it`)
    await this.#process.exited
    // A throw of its own (not only a rejection) is caught: the result directory still goes.
    await Promise.resolve()
      .then(() => this.#log.end(ending))
      .catch((error: unknown) => console.error(`termkeep sidecar: ending run ${this.id}`, error))
    rmSync(this.#spec.resultDir, { recursive: true, force: true })
  }
}
