/**
 * Writing workflow runs and their event logs (the queries: storage/workflows/writes.ts). The
 * sidecar that runs a run is the only writer of its rows. `RunLog` appends one run's events in order, each checked against the log invariant
 * (common/workflow-log.ts) before it is written: a violation is a bug in the engine and is
 * refused, never stored. A database that cannot take a write is waited out (sidecar/write-retry.ts);
 * the events keep their order.
 */
import type { WorkflowEventType } from '../../schema/wire/workflows.ts'
import {
  appendRunEvent,
  endRun,
  insertRun,
  interruptRunsBefore,
  runOfSession,
  setRunProcess,
  type Ending,
  type Interrupted,
  type RunEventRow,
  type RunRow,
} from '../../storage/workflows/writes.ts'
import { RunLogChecker } from '../../common/workflow-log.ts'
import type { StartWorkflow } from '../../schema/wire/workflows.ts'
import { repeatedStart } from '../../storage/workflows/runs.ts'
import type { Database } from '../../storage/client.ts'
import { isDatabaseUnavailable } from '../../storage/unavailable.ts'
import { Retry } from '../write-retry.ts'

export type { Ending, Interrupted, RunRow }

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
    return this.#append('workflow/start', data, (event) => insertRun(this.#db, row, event))
  }

  /** Appends an event after every earlier one; resolves once it is durable. */
  append(type: Exclude<WorkflowEventType, 'workflow/start' | 'workflow/end'>, data: unknown): Promise<void> {
    return this.#append(type, data, (event) => appendRunEvent(this.#db, event))
  }

  /** `workflow/end` and the run's final row, in one transaction. */
  end(ending: Ending): Promise<void> {
    const at = Date.now()
    return this.#append('workflow/end', { result: ending.result, at }, (event) => endRun(this.#db, event, ending, at))
  }

  #append(type: WorkflowEventType, data: unknown, write: (event: RunEventRow) => Promise<unknown>): Promise<void> {
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

export class RunStore {
  readonly #db: Database

  constructor(db: Database) {
    this.#db = db
  }

  log(runId: string): RunLog {
    return new RunLog(this.#db, runId)
  }

  setProcess(runId: string, pid: number, startTicks: number | undefined): Promise<void> {
    return setRunProcess(this.#db, runId, pid, startTicks)
  }

  /** The run an earlier start under `key` started (storage/workflows/runs.ts `repeatedStart`). */
  repeatedStart(sessionId: string, tokenId: string, key: string, request: StartWorkflow): Promise<string | undefined> {
    return repeatedStart(this.#db, sessionId, tokenId, key, request)
  }

  get(sessionId: string, runId: string): Promise<{ id: string } | undefined> {
    return runOfSession(this.#db, sessionId, runId)
  }

  /**
   * At start: runs an earlier sidecar generation left running lost their script process and their
   * members' terminals with it; they read as interrupted from now on. Returns their script
   * processes, for the caller to make sure none survived.
   */
  interruptEarlier(generation: number): Promise<Interrupted[]> {
    return interruptRunsBefore(this.#db, generation)
  }
}
