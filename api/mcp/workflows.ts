/**
 * The workflow tools (routes: api/workflows/routes.ts, docs/workflows.md). Status, list and cancel
 * are one route each; `workflow_events` reads the run's event stream to a bound (stream-read.ts);
 * `run_workflow` starts a run and, with `wait`, follows its events until the end, then answers the
 * run as `workflow_status` does. The start carries an Idempotency-Key of its own and is retried
 * within the call while its outcome is unknown (keyed.ts): a retry never starts a second run. The
 * events route ends its stream only once the run is over
 * (`workflow/end`, or `interrupted` when its sidecar died), so its end is the run's end.
 */
import { TermkeepError } from '../../schema/errors.ts'
import { IDEMPOTENCY_KEY_HEADER, JsonValue, SessionId } from '../../schema/wire/common.ts'
import { WorkflowRunArgs } from '../../schema/wire/mcp.ts'
import {
  CancelWorkflow,
  EventsQuery,
  RunListQuery,
  RunParams,
  StartWorkflow,
  type RunDetail,
  type RunSummary,
} from '../../schema/wire/workflows.ts'
import * as v from 'valibot'
import { EventStream } from './events.ts'
import { keyedRequest } from './keyed.ts'
import { toolInput } from './input.ts'
import { streamReadTool } from './stream-read.ts'
import { jsonResult, routeTool, type RouteRef, type Tool } from './tool.ts'

const W = '/v1/sessions/:sid/workflows'
const RUN = `${W}/:rid`
const EVENTS = `${RUN}/events`
const FINAL = ['workflow/end', 'interrupted']
const READ = { readOnlyHint: true, openWorldHint: false }
/** What waiting reads: the events until the end, then the run. */
const WAITING: RouteRef[] = [
  { method: 'GET', path: EVENTS },
  { method: 'GET', path: RUN },
]

/** A run as status answers it, without what the caller sent (script, input). */
function runOf(detail: RunDetail): Omit<RunDetail, 'script' | 'input'> {
  const { script: _script, input: _input, ...run } = detail
  return run
}

/** Reads the run's events until its end or the deadline; the last sequence read, and whether it ended. */
async function untilEnd(stream: EventStream, deadline: number): Promise<{ ended: boolean; next: number }> {
  let next = 0
  for (;;) {
    const event = await stream.next(deadline - Date.now())
    if (event === 'timeout') return { ended: false, next }
    if (event === 'ended') return { ended: true, next }
    if (event.id !== undefined) next = Number(event.id)
    if (FINAL.includes(event.event)) return { ended: true, next }
  }
}

export const runWorkflow: Tool = {
  name: 'run_workflow',
  title: 'Run a workflow',
  description:
    'Start a workflow run in the session: `script` is the body of an async function whose agent(prompt) calls run sub-agents in new terminals ' +
    '(parallel, pipeline, readText, log and `input` in scope; see docs/workflows.md). Answers the run at once, or with `wait: true` once it ended ' +
    '(at most timeoutMs; `timedOut: true` means it is still running) with its result {stopReason, value, error} and members. ' +
    '`next` is the events cursor for workflow_events.',
  annotations: { destructiveHint: true, openWorldHint: true },
  uses: [{ method: 'POST', path: W }],
  // The route takes any JSON as `input` (and checks its size); the tool says so in its schema.
  input: toolInput({
    params: v.object({ sid: SessionId }),
    body: v.strictObject({ ...StartWorkflow.entries, input: v.optional(JsonValue) }),
    own: WorkflowRunArgs,
  }),
  async run({ params, body, own }, { call, need, tuning }) {
    const args = own as WorkflowRunArgs
    // Refused before the run starts, not after: waiting reads what workflows:read guards.
    if (args.wait) need(WAITING, 'run_workflow with wait: true')
    const started = Date.now()
    const { run } = await keyedRequest(
      call,
      (key) => call.json<{ run: RunSummary }>('POST', W, { params, body, headers: { [IDEMPOTENCY_KEY_HEADER]: key } }),
      {
        retryMs: tuning?.retryMs,
        unknown: 'the run may have started when it resumes; list_workflows shows whether it did before you start it again',
      },
    )
    if (!args.wait) return jsonResult({ run })
    const ids = { sid: run.sessionId, rid: run.id }
    try {
      const stream = await EventStream.open(call, EVENTS, { params: ids })
      let outcome: Awaited<ReturnType<typeof untilEnd>>
      try {
        outcome = await untilEnd(stream, started + args.timeoutMs)
      } finally {
        stream.close()
      }
      const detail = await call.json<RunDetail>('GET', RUN, { params: ids })
      return jsonResult({ run: runOf(detail), timedOut: !outcome.ended, elapsedMs: Date.now() - started, next: outcome.next })
    } catch (error) {
      // The run is started whatever happened to the wait: its id must reach the caller.
      if (!(error instanceof TermkeepError)) throw error
      throw new TermkeepError(error.code, `run ${run.id} started, but waiting for its end failed: ${error.message}`, {
        ...error.details,
        runId: run.id,
      })
    }
  },
}

export const WORKFLOW_TOOLS: readonly Tool[] = [
  runWorkflow,
  routeTool({
    name: 'workflow_status',
    title: 'Workflow run status',
    description:
      'One run: status (running, completed, error, cancelled, interrupted), its result once ended, its members (each a terminal of the session), script and input, and lastSequence (its last event).',
    annotations: READ,
    method: 'GET',
    path: RUN,
    params: RunParams,
  }),
  routeTool({
    name: 'list_workflows',
    title: 'List workflow runs',
    description:
      "The session's runs, newest first, each with its status, result and members; `more` says there are older ones (pass the last id as `before`).",
    annotations: READ,
    method: 'GET',
    path: W,
    params: v.object({ sid: SessionId }),
    query: RunListQuery,
  }),
  streamReadTool({
    name: 'workflow_events',
    title: 'Read workflow events',
    description:
      "The run's events after cursor `after` (0: from the start), in order: workflow/start, agent-start, agent-end, log, end (`interrupted` when its sidecar died). " +
      'Reads what is there and what arrives until the run ended (reason ended), nothing came for quietMs (quiet), maxEvents or maxBytes (limit), or timeoutMs. ' +
      'Pass `next` back as `after` to read on: nothing is repeated or skipped.',
    path: EVENTS,
    params: RunParams,
    query: EventsQuery,
    cursor: 'after',
    final: FINAL,
  }),
  routeTool({
    name: 'cancel_workflow',
    title: 'Cancel a workflow run',
    description:
      "Cancel a run: its script is stopped and every open member's terminal closed; answers the run once settled (status cancelled). A run that already ended is answered as it is.",
    annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    method: 'POST',
    path: `${RUN}/cancel`,
    params: RunParams,
    body: CancelWorkflow,
  }),
]
