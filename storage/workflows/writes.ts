/**
 * A workflow run's writes: the sidecar that runs it is the only writer of its row and its event
 * log (sidecar/workflows/run-log.ts keeps the order and the invariant; runs.ts is the read side).
 */
import { and, eq } from 'drizzle-orm'
import type { WorkflowResult, WorkflowStatus } from '../../schema/wire/workflows.ts'
import type { Database } from '../client.ts'
import { workflowEvents, workflowRuns } from '../tables.ts'
import { earlierOnSameHost } from '../generations.ts'

export type RunRow = typeof workflowRuns.$inferInsert
export type RunEventRow = typeof workflowEvents.$inferInsert

export interface Ending {
  status: Exclude<WorkflowStatus, 'running' | 'interrupted'>
  result: WorkflowResult
  cancelReason?: string
}

/** The run's row and its `workflow/start`, in one transaction. */
export async function insertRun(db: Database, row: RunRow, start: RunEventRow): Promise<void> {
  await db.batch([db.insert(workflowRuns).values(row), db.insert(workflowEvents).values(start)])
}

/** An event, and the run's last sequence with it, in one transaction. */
export async function appendRunEvent(db: Database, event: RunEventRow): Promise<void> {
  await db.batch([
    db.insert(workflowEvents).values(event),
    db.update(workflowRuns).set({ lastSequence: event.sequence, updatedAt: Date.now() }).where(eq(workflowRuns.id, event.runId)),
  ])
}

/** `workflow/end` and the run's final row, in one transaction; a run no longer running stays as it is. */
export async function endRun(db: Database, event: RunEventRow, { status, result, cancelReason }: Ending, at: number): Promise<void> {
  await db.batch([
    db.insert(workflowEvents).values(event),
    db
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
      .where(and(eq(workflowRuns.id, event.runId), eq(workflowRuns.status, 'running'))),
  ])
}

export async function setRunProcess(db: Database, runId: string, pid: number, startTicks: number | undefined): Promise<void> {
  await db
    .update(workflowRuns)
    .set({ pid, pidStartTicks: startTicks ?? null })
    .where(eq(workflowRuns.id, runId))
}

export async function runOfSession(db: Database, sessionId: string, runId: string): Promise<{ id: string } | undefined> {
  const [row] = await db
    .select({ id: workflowRuns.id })
    .from(workflowRuns)
    .where(and(eq(workflowRuns.id, runId), eq(workflowRuns.sessionId, sessionId)))
    .limit(1)
  return row
}

/** A run an earlier sidecar left running, and its script process. */
export interface Interrupted {
  id: string
  sessionId: string
  createdAt: number
  pid: number | null
  pidStartTicks: number | null
}

/** Runs an earlier generation of this host left running now read as interrupted; returns their script
 * processes. */
export function interruptRunsBefore(db: Database, generation: number): Promise<Interrupted[]> {
  const now = Date.now()
  return db
    .update(workflowRuns)
    .set({ status: 'interrupted', updatedAt: now, endedAt: now })
    .where(and(eq(workflowRuns.status, 'running'), earlierOnSameHost(workflowRuns.hostGeneration, generation)))
    .returning({
      id: workflowRuns.id,
      sessionId: workflowRuns.sessionId,
      createdAt: workflowRuns.createdAt,
      pid: workflowRuns.pid,
      pidStartTicks: workflowRuns.pidStartTicks,
    })
}
