/**
 * Workflow runs read straight from libSQL (the sidecar writes them), so listing a session's runs,
 * reading one and replaying its events work for finished runs and while the sidecar is down.
 * A run is always looked up together with its session: another session's run is missing.
 */
import { and, asc, desc, eq, gt, inArray, lt, or } from 'drizzle-orm'
import { TermkeepError } from '../../schema/errors.ts'
import { DEFAULT_WORKFLOW_RUNS_PAGE } from '../../schema/limits.ts'
import { workflowEvents, workflowRuns } from '../tables.ts'
import { checkRunLog, foldMembers, type LoggedEvent } from '../../common/workflow-log.ts'
import {
  sameStart,
  type RunDetail,
  type RunList,
  type RunSummary,
  type StartWorkflow,
  type WorkflowEvent,
  type WorkflowResult,
} from '../../schema/wire/workflows.ts'
import type { Database } from '../client.ts'

type RunRow = typeof workflowRuns.$inferSelect

export const notFound = (sessionId: string, runId: string) =>
  new TermkeepError('workflow/not-found', `no workflow run ${runId} in session ${sessionId}`, { runId })

/** The run `runId` of the session `sessionId` (another session's run is missing). */
const runOfSession = (sessionId: string, runId: string) => and(eq(workflowRuns.id, runId), eq(workflowRuns.sessionId, sessionId))

async function runRow(db: Database, sessionId: string, runId: string): Promise<RunRow> {
  const [row] = await db.select().from(workflowRuns).where(runOfSession(sessionId, runId)).limit(1)
  if (!row) throw notFound(sessionId, runId)
  return row
}

function resultOf(row: RunRow): WorkflowResult | null {
  if (row.stopReason === null) return null
  return {
    stopReason: row.stopReason,
    ...(row.stopReason === 'completed' ? { value: row.value === null ? null : JSON.parse(row.value) } : {}),
    ...(row.error !== null ? { error: row.error } : {}),
    ...(row.stopLimit !== null ? { limit: row.stopLimit } : {}),
    agentsStarted: row.agentsStarted ?? 0,
  }
}

function summaryOf(row: RunRow, memberEvents: LoggedEvent[]): RunSummary {
  return {
    id: row.id,
    sessionId: row.sessionId,
    status: row.status,
    concurrency: row.concurrency,
    profile: row.profile,
    createdAt: row.createdAt,
    endedAt: row.endedAt,
    result: resultOf(row),
    cancelReason: row.cancelReason,
    limits:
      row.wallTimeLimitMs === null || row.cpuTimeLimitMs === null
        ? null
        : { wallTimeMs: row.wallTimeLimitMs, cpuTimeMs: row.cpuTimeLimitMs },
    members: foldMembers(memberEvents, row.status === 'interrupted'),
  }
}

const asLogged = (e: { sequence: number; type: string; data: string; runId?: string }): LoggedEvent => ({
  sequence: e.sequence,
  type: e.type,
  data: JSON.parse(e.data),
})

/** The member events (agent-start/agent-end) of some runs, grouped by run. */
async function memberEvents(db: Database, runIds: string[]): Promise<Map<string, LoggedEvent[]>> {
  const byRun = new Map<string, LoggedEvent[]>(runIds.map((id) => [id, []]))
  if (runIds.length === 0) return byRun
  const rows = await db
    .select({ runId: workflowEvents.runId, sequence: workflowEvents.sequence, type: workflowEvents.type, data: workflowEvents.data })
    .from(workflowEvents)
    .where(and(inArray(workflowEvents.runId, runIds), inArray(workflowEvents.type, ['workflow/agent-start', 'workflow/agent-end'])))
    .orderBy(asc(workflowEvents.runId), asc(workflowEvents.sequence))
  for (const row of rows) byRun.get(row.runId)?.push(asLogged(row))
  return byRun
}

export async function runSummary(db: Database, sessionId: string, runId: string): Promise<RunSummary> {
  const row = await runRow(db, sessionId, runId)
  return summaryOf(row, (await memberEvents(db, [runId])).get(runId) ?? [])
}

/** A session's runs, newest first; `before` (a run id of this session) pages on. */
export async function listRuns(db: Database, sessionId: string, query: { limit?: number; before?: string }): Promise<RunList> {
  const limit = query.limit ?? DEFAULT_WORKFLOW_RUNS_PAGE
  let where = eq(workflowRuns.sessionId, sessionId)
  if (query.before !== undefined) {
    const anchor = await runRow(db, sessionId, query.before)
    where = and(
      where,
      or(lt(workflowRuns.createdAt, anchor.createdAt), and(eq(workflowRuns.createdAt, anchor.createdAt), lt(workflowRuns.id, anchor.id))),
    )!
  }
  const rows = await db
    .select()
    .from(workflowRuns)
    .where(where)
    .orderBy(desc(workflowRuns.createdAt), desc(workflowRuns.id))
    .limit(limit + 1)
  const page = rows.slice(0, limit)
  const members = await memberEvents(
    db,
    page.map((r) => r.id),
  )
  return { runs: page.map((row) => summaryOf(row, members.get(row.id) ?? [])), more: rows.length > limit }
}

/** One run with its script, input and the invariant check of its whole log. */
export async function runDetail(db: Database, sessionId: string, runId: string): Promise<RunDetail> {
  const row = await runRow(db, sessionId, runId)
  const events = (
    await db
      .select({ sequence: workflowEvents.sequence, type: workflowEvents.type, data: workflowEvents.data })
      .from(workflowEvents)
      .where(eq(workflowEvents.runId, runId))
      .orderBy(asc(workflowEvents.sequence))
  ).map(asLogged)
  const check = checkRunLog(events)
  return {
    ...summaryOf(row, events),
    script: row.script,
    ...(row.input !== null ? { input: JSON.parse(row.input) } : {}),
    lastSequence: row.lastSequence,
    log: check.valid ? { valid: true } : { valid: false, problem: check.problem },
  }
}

/**
 * The run an earlier start under this Idempotency-Key started (the key is unique per session and
 * token, and kept with the run): its id when `request` asks for that same run, a 422 when it asks
 * for another; undefined when the key started nothing yet. The API and the sidecar both ask.
 */
export async function repeatedStart(
  db: Database,
  sessionId: string,
  tokenId: string,
  key: string,
  request: StartWorkflow,
): Promise<string | undefined> {
  const [row] = await db
    .select({
      id: workflowRuns.id,
      script: workflowRuns.script,
      input: workflowRuns.input,
      concurrency: workflowRuns.concurrency,
      profile: workflowRuns.profile,
      wallTimeLimitMs: workflowRuns.wallTimeLimitMs,
      cpuTimeLimitMs: workflowRuns.cpuTimeLimitMs,
    })
    .from(workflowRuns)
    .where(and(eq(workflowRuns.sessionId, sessionId), eq(workflowRuns.tokenId, tokenId), eq(workflowRuns.idempotencyKey, key)))
    .limit(1)
  if (!row) return undefined
  if (!sameStart(row, request)) {
    throw new TermkeepError(
      'workflow/idempotency-key-reused',
      `this Idempotency-Key already started run ${row.id} with another request (script, input, concurrency, profile or limits); nothing was started`,
      {
        key,
        runId: row.id,
      },
    )
  }
  return row.id
}

/** The run's status, or a not-found error. Only the status column: an events stream asks at
 * every poll, and the whole row carries the script, input and value. */
export async function runState(db: Database, sessionId: string, runId: string): Promise<{ status: RunRow['status'] }> {
  const [row] = await db.select({ status: workflowRuns.status }).from(workflowRuns).where(runOfSession(sessionId, runId)).limit(1)
  if (!row) throw notFound(sessionId, runId)
  return row
}

/** Events after `after`, in order (at most `limit`). */
export async function eventsAfter(db: Database, runId: string, after: number, limit: number): Promise<WorkflowEvent[]> {
  const rows = await db
    .select({ sequence: workflowEvents.sequence, type: workflowEvents.type, data: workflowEvents.data })
    .from(workflowEvents)
    .where(and(eq(workflowEvents.runId, runId), gt(workflowEvents.sequence, after)))
    .orderBy(asc(workflowEvents.sequence))
    .limit(limit)
  return rows.map((row) => ({ sequence: row.sequence, type: row.type, data: JSON.parse(row.data) }) as WorkflowEvent)
}
