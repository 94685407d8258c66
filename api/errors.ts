/**
 * The API's one error path: every TermkeepError becomes `{error:{code,message,...}}` with its
 * status; anything else is a bug, logged and answered as `internal/error` without internals.
 */
import type { Context } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { bearerChallenge, TermkeepError } from '../schema/errors.ts'
import { isDatabaseUnavailable } from '../storage/unavailable.ts'

export function errorResponse(c: Context, error: TermkeepError): Response {
  const challenge = bearerChallenge(error)
  if (challenge !== undefined) c.header('WWW-Authenticate', challenge)
  return c.json(error.toBody(), error.status)
}

export function onError(error: Error, c: Context): Response {
  if (error instanceof TermkeepError) return errorResponse(c, error)
  if (isDatabaseUnavailable(error)) {
    return errorResponse(c, new TermkeepError('database/unavailable', 'the database is not answering; try again'))
  }
  if (error instanceof HTTPException && error.status < 500) {
    const code = error.status === 413 ? 'request/too-large' : error.status === 401 ? 'auth/invalid-token' : 'request/invalid'
    return errorResponse(c, new TermkeepError(code, error.message || 'bad request'))
  }
  // The client left while its request was in flight (a relayed stream's sidecar call is torn
  // down with it): nobody reads this answer, and it is not a bug.
  if (c.req.raw.signal.aborted) return new Response(null, { status: 503 })
  console.error('termkeep api: unexpected error', c.req.method, c.req.path, error)
  return errorResponse(c, new TermkeepError('internal/error', 'internal error'))
}

export function notFound(c: Context): Response {
  return errorResponse(c, new TermkeepError('route/not-found', `no route for ${c.req.method} ${c.req.path}`))
}
