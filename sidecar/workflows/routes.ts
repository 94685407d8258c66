/**
 * The sidecar's workflow routes (schema/wire/workflows.ts), same paths as the public API:
 *   POST /v1/sessions/:sid/workflows              StartWorkflow, header Termkeep-Principal (the
 *        caller's token id: readText() runs under its authority), optional Idempotency-Key →
 *        201 {runId}, or 200 {runId} of the run an earlier start under that key started
 *   POST /v1/sessions/:sid/workflows/:rid/cancel  CancelWorkflow → {runId}, once the run settled
 * Everything else about runs the API reads from libSQL.
 */
import { Hono, type Context } from 'hono'
import { IDEMPOTENCY_KEY_HEADER, IdempotencyKey, SessionId } from '../../schema/wire/common.ts'
import { PRINCIPAL_HEADER, Principal } from '../../schema/wire/terminals.ts'
import { CancelWorkflow, RunId, StartWorkflow, type RunStarted } from '../../schema/wire/workflows.ts'
import { jsonBody, parse } from '../http/validate.ts'
import type { WorkflowEngine } from './engine.ts'

export function workflowRoutes(engine: WorkflowEngine): Hono {
  const app = new Hono()
  const sid = (c: Context) => parse(SessionId, c.req.param('sid'), 'request/invalid')
  app.post('/v1/sessions/:sid/workflows', async (c) => {
    const session = sid(c)
    const principal = parse(Principal, c.req.header(PRINCIPAL_HEADER), 'request/invalid')
    const header = c.req.header(IDEMPOTENCY_KEY_HEADER)
    const key = header === undefined ? undefined : parse(IdempotencyKey, header, 'request/invalid')
    const request = parse(StartWorkflow, await jsonBody(c.req.raw))
    const { runId, created } = await engine.startRun(session, request, principal, key)
    const answer: RunStarted = { runId }
    return c.json(answer, created ? 201 : 200)
  })
  app.post('/v1/sessions/:sid/workflows/:rid/cancel', async (c) => {
    const session = sid(c)
    const runId = parse(RunId, c.req.param('rid'), 'request/invalid')
    const { reason } = parse(CancelWorkflow, await jsonBody(c.req.raw))
    await engine.cancel(session, runId, reason)
    const answer: RunStarted = { runId }
    return c.json(answer)
  })
  return app
}
