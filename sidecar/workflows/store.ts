/**
 * Workflow runs and their event logs in libSQL. The sidecar that runs a run is the only writer of
 * its rows. `RunLog` appends one run's events in order, each checked against the log invariant
 * (schema/workflow-log.ts) before it is written: a violation is a bug in the engine and is
 * refused, never stored. A database that cannot take a write is waited out (sidecar/retry.ts);
 * the events keep their order.
 */
import { and, eq, lt } from 'drizzle-orm'
import { workflowEvents, workflowRuns, type WorkflowEventType, type WorkflowStatus } from '../../schema/tables.ts'
import { RunLogChecker } from '../../schema/workflow-log.ts'
import type { StartWorkflow, WorkflowResult } from '../../schema/wire/workflows.ts'
import { repeatedStart } from '../../api/workflows/store.ts'
import type { Database } from '../../storage/client.ts'
import { isDatabaseUnavailable } from '../../storage/unavailable.ts'
import { Retry } from '../retry.ts'

export type RunRow = typeof workflowRuns.$inferInsert

export interface Ending {
  status: Exclude<WorkflowStatus, 'running' | 'interrupted'>
  result: WorkflowResult
  cancelReason?: string
}

export class RunLog {
  readonly #db: Database
  readonly #runId: string
  readonly #checker = new RunLogChecker()
  readonly #retry: Retry
  #sequence = 0
  #tail: Promise<void> = Promise.resolve()

  constructor(db: Database, runId: string) {
    this.#db = db
    this.#runId = runId
    this.#retry = new Retry(`writing workflow run ${runId}'s events`)
  }

  /** The run's row and its `workflow/start`, in one transaction: the run exists once this resolves. */
  begin(row: RunRow, data: unknown): Promise<void> {
    return this.#append('workflow/start', data, (event) =>
      this.#db.batch([this.#db.insert(workflowRuns).values(row), this.#db.insert(workflowEvents).values(event)]),
    )
  }

  /** Appends an event after every earlier one; resolves once it is durable. */
  append(type: Exclude<WorkflowEventType, 'workflow/start' | 'workflow/end'>, data: unknown): Promise<void> {
    return this.#append(type, data, (event) =>
      this.#db.batch([
        this.#db.insert(workflowEvents).values(event),
        this.#db.update(workflowRuns).set({ lastSequence: event.sequence, updatedAt: Date.now() }).where(eq(workflowRuns.id, this.#runId)),
      ]),
    )
  }

  /** `workflow/end` and the run's final row, in one transaction. */
  end({ status, result, cancelReason }: Ending): Promise<void> {
    const at = Date.now()
    return this.#append('workflow/end', { result, at }, (event) =>
      this.#db.batch([
        this.#db.insert(workflowEvents).values(event),
        this.#db
          .update(workflowRuns)
          .set({
            status,
            lastSequence: event.sequence,
            stopReason: result.stopReason,
            error: result.error ?? null,
            stopLimit: result.limit ?? null,
            value: result.value === undefined ? null : JSON.stringify(result.value),
            agentsStarted: result.agentsStarted,
            cancelReason: cancelReason ?? null,
            updatedAt: at,
            endedAt: at,
          })
          .where(and(eq(workflowRuns.id, this.#runId), eq(workflowRuns.status, 'running'))),
      ]),
    )
  }

  #append(type: WorkflowEventType, data: unknown, write: (event: typeof workflowEvents.$inferInsert) => Promise<unknown>): Promise<void> {
    const sequence = this.#sequence + 1
    // Throws for an event that would break the invariant: nothing is queued or written then.
    this.#checker.accept({ sequence, type, data })
    this.#sequence = sequence
    const d = data as { seq?: number; outcome?: 'completed' | 'failed' | 'cancelled'; at?: number }
    const event = {
      runId: this.#runId,
      sequence,
      type,
      memberSeq: d.seq ?? null,
      outcome: d.outcome ?? null,
      data: JSON.stringify(data),
      createdAt: d.at ?? Date.now(),
    }
    const written = this.#tail.then(() => this.#persist(() => write(event)))
    this.#tail = written.catch(() => undefined)
    return written
  }

  async #persist(write: () => Promise<unknown>): Promise<void> {
    for (;;) {
      try {
        await write()
        this.#retry.succeeded()
        return
      } catch (error) {
        if (!isDatabaseUnavailable(error)) throw error
        await new Promise<void>((resolve) => this.#retry.failed(error, resolve))
      }
    }
  }
}

/** A run an earlier sidecar left running, and its script process. */
export interface Interrupted {
  id: string
  sessionId: string
  createdAt: number
  pid: number | null
  pidStartTicks: number | null
}

export class RunStore {
  readonly #db: Database

  constructor(db: Database) {
    this.#db = db
  }

  log(runId: string): RunLog {
    return new RunLog(this.#db, runId)
  }

  async setProcess(runId: string, pid: number, startTicks: number | undefined): Promise<void> {
    await this.#db
      .update(workflowRuns)
      .set({ pid, pidStartTicks: startTicks ?? null })
      .where(eq(workflowRuns.id, runId))
  }

  /** The run an earlier start under `key` started (api/workflows/store.ts `repeatedStart`). */
  repeatedStart(sessionId: string, tokenId: string, key: string, request: StartWorkflow): Promise<string | undefined> {
    return repeatedStart(this.#db, sessionId, tokenId, key, request)
  }

  async get(sessionId: string, runId: string): Promise<{ id: string } | undefined> {
    const [row] = await this.#db
      .select({ id: workflowRuns.id })
      .from(workflowRuns)
      .where(and(eq(workflowRuns.id, runId), eq(workflowRuns.sessionId, sessionId)))
      .limit(1)
    return row
  }

  /**
   * At start: runs an earlier sidecar generation left running lost their script process and their
   * members' terminals with it; they read as interrupted from now on. Returns their script
   * processes, for the caller to make sure none survived.
   */
  async interruptEarlier(generation: number): Promise<Interrupted[]> {
    const now = Date.now()
    return this.#db
      .update(workflowRuns)
      .set({ status: 'interrupted', updatedAt: now, endedAt: now })
      .where(and(eq(workflowRuns.status, 'running'), lt(workflowRuns.hostGeneration, generation)))
      .returning({
        id: workflowRuns.id,
        sessionId: workflowRuns.sessionId,
        createdAt: workflowRuns.createdAt,
        pid: workflowRuns.pid,
        pidStartTicks: workflowRuns.pidStartTicks,
      })
  }
}
