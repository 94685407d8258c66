/**
 * Workflow routes (schema/wire/workflows.ts). Starting and cancelling are delegated to the sidecar,
 * which runs the script process and the sub-agents' terminals; the caller's token id goes with a
 * start, so the run's readText() is held to that token's authority for as long as it runs. Runs,
 * their members and their events are read from libSQL: they answer for finished runs and with the
 * sidecar down.
 */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import {
  MAX_IDEMPOTENCY_KEY_CHARS,
  MAX_RUNNING_WORKFLOWS,
  MAX_RUNNING_WORKFLOWS_PER_SESSION,
  MAX_RUNNING_WORKFLOWS_PER_TOKEN,
} from '../../schema/limits.ts'
import { IdempotencyKey, SessionId } from '../../schema/wire/common.ts'
import {
  CancelWorkflow,
  EventsQuery,
  RunDetail,
  RunList,
  RunListQuery,
  RunParams,
  RunResponse,
  StartWorkflow,
} from '../../schema/wire/workflows.ts'
import * as v from 'valibot'
import { guard, openStream } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { error, json, sidecarDownUnknown, sse } from '../openapi.ts'
import { lastEventId, sseResponse } from '../sse.ts'
import { validate } from '../validate.ts'
import { streamRunEvents } from './events.ts'
import { listRuns, repeatedStart, runDetail, runState, runSummary } from '../../storage/workflows/runs.ts'

const tags = ['workflows']
const SessionOnly = v.object({ sid: SessionId })
const StartHeaders = v.object({ 'idempotency-key': v.optional(IdempotencyKey) })
const NOT_FOUND = { 404: error('no such session, or no such run in it (`session/not-found`, `workflow/not-found`)') }

export const workflowRoutes = new Hono<AppEnv>()
  .post(
    '/v1/sessions/:sid/workflows',
    describeRoute({
      tags,
      summary: 'Start a workflow run: a script (the body of an async function) whose agent() calls run in new terminals of this session',
      description:
        'Refused before anything is published (no run, event or terminal) when the script does not parse (`workflow/invalid-script`), names an unknown profile (`workflow/unknown-profile`), is too large, or an option is unknown or out of range (`request/invalid`). ' +
        '`limits: {wallTimeMs?, cpuTimeMs?}` bounds the run (defaults and maxima in schema/limits.ts); a run a limit ends has `result.limit` (`wall-time`, `cpu-time`, `memory`). ' +
        `An optional \`Idempotency-Key\` header (1–${MAX_IDEMPOTENCY_KEY_CHARS} visible ASCII characters) names the start: a repeat with the same key and the same request (from the same token, in the same session) answers the run the first one started, 200 instead of 201, and starts nothing; the key is kept with the run, so this holds after a 503, after a sidecar restart, and while the sidecar is down. The same key with another request is 422 \`workflow/idempotency-key-reused\`.`,
      responses: {
        200: json(RunResponse, 'a repeat of an `Idempotency-Key`: the run its first start started (nothing new was started)'),
        201: json(RunResponse, 'started'),
        400: error('`workflow/invalid-script`, `workflow/unknown-profile`, `request/invalid` (also a malformed `Idempotency-Key`)'),
        409: error(
          `a limit on live runs is reached (\`workflow/limit-reached\`: \`scope\` says whose, \`session\` (${MAX_RUNNING_WORKFLOWS_PER_SESSION}), \`token\` (${MAX_RUNNING_WORKFLOWS_PER_TOKEN}) or \`server\` (${MAX_RUNNING_WORKFLOWS}), with \`limit\` and \`running\`; the message says how to free a place), or this server cannot confine scripts as configured (\`workflow/unavailable\`; \`/v1/health\` says why)`,
        ),
        422: error(
          'the `Idempotency-Key` already started a run with another request (`workflow/idempotency-key-reused`); nothing was started',
        ),
        ...NOT_FOUND,
        ...sidecarDownUnknown(
          'Retry with the same `Idempotency-Key` and body: a run the first attempt started is answered 200 (it is not started twice). Without a key, a retry may start a second run: check `GET /v1/sessions/:sid/workflows` first.',
        ),
      },
    }),
    guard('workflows:run'),
    validate('param', SessionOnly),
    validate('header', StartHeaders),
    validate('json', StartWorkflow),
    async (c) => {
      const { sid } = c.req.valid('param')
      const { db } = c.var.deps
      const request = c.req.valid('json')
      const key = c.req.valid('header')['idempotency-key']
      const { tokenId } = c.var.auth
      // A repeat is answered from the database: also while the sidecar is down or after it restarted.
      const repeated = key === undefined ? undefined : await repeatedStart(db, sid, tokenId, key, request)
      if (repeated !== undefined) return c.json({ run: await runSummary(db, sid, repeated) }, 200)
      const { runId, created } = await (await c.var.fleet.forSession(sid)).startWorkflow(sid, request, tokenId, key)
      return c.json({ run: await runSummary(db, sid, runId) }, created ? 201 : 200)
    },
  )
  .get(
    '/v1/sessions/:sid/workflows',
    describeRoute({
      tags,
      summary: "The session's runs, newest first, each with its members' states",
      responses: { 200: json(RunList), ...NOT_FOUND },
    }),
    guard('workflows:read'),
    validate('param', SessionOnly),
    validate('query', RunListQuery),
    async (c) => c.json(await listRuns(c.var.deps.db, c.req.valid('param').sid, c.req.valid('query'))),
  )
  .get(
    '/v1/sessions/:sid/workflows/:rid',
    describeRoute({
      tags,
      summary: 'One run: status, result, members, script and input, and its log checked',
      responses: { 200: json(RunDetail), ...NOT_FOUND },
    }),
    guard('workflows:read'),
    validate('param', RunParams),
    async (c) => {
      const { sid, rid } = c.req.valid('param')
      return c.json(await runDetail(c.var.deps.db, sid, rid))
    },
  )
  .get(
    '/v1/sessions/:sid/workflows/:rid/events',
    describeRoute({
      tags,
      summary: "SSE: the run's events in order (id = sequence; Last-Event-ID or ?after= resumes), live until workflow/end",
      description:
        'Data shapes: RunStartData, AgentStartData, AgentEndData, LogData, RunEndData (schema/wire/workflows.ts). An interrupted run (its sidecar died) ends the stream with `interrupted` instead of `workflow/end`.',
      responses: {
        200: sse('the run log', [
          'workflow/start',
          'workflow/agent-start',
          'workflow/agent-end',
          'workflow/log',
          'workflow/end',
          'interrupted',
        ]),
        ...NOT_FOUND,
      },
    }),
    guard('workflows:read'),
    validate('param', RunParams),
    validate('query', EventsQuery),
    async (c) => {
      const { sid, rid } = c.req.valid('param')
      const resume = lastEventId(c.req.header('last-event-id'))
      const after = resume ?? c.req.valid('query').after ?? 0
      const { db, tuning } = c.var.deps
      await runState(db, sid, rid) // 404 before the stream starts
      const polling = { pollMs: tuning?.workflowEventsPollMs, maxPolls: tuning?.workflowEventsMaxPolls }
      return openStream(c, (options) =>
        sseResponse((sink) => streamRunEvents(db, { sessionId: sid, runId: rid }, after, sink, polling), options),
      )
    },
  )
  .post(
    '/v1/sessions/:sid/workflows/:rid/cancel',
    describeRoute({
      tags,
      summary: "Cancel a run: its script process is killed at once, every open member's terminal closed; answers once settled",
      description: 'Repeatable: a run that already ended is answered as it is (the first reason wins).',
      responses: { 200: json(RunResponse), ...NOT_FOUND, ...sidecarDownUnknown('Retry: cancelling is repeatable.') },
    }),
    guard('workflows:run'),
    validate('param', RunParams),
    validate('json', CancelWorkflow),
    async (c) => {
      const { sid, rid } = c.req.valid('param')
      const { db } = c.var.deps
      // An ended (or interrupted) run needs no sidecar: it is answered from the database.
      const { status } = await runState(db, sid, rid)
      if (status === 'running') await (await c.var.fleet.forSession(sid)).cancelWorkflow(sid, rid, c.req.valid('json'))
      return c.json({ run: await runSummary(db, sid, rid) })
    },
  )
