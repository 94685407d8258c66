/**
 * The API's one error path: every TermkeepError becomes `{error:{code,message,...}}` with its
 * status; anything else is a bug, logged and answered as `internal/error` without internals.
 */
import type { Context } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { TermkeepError } from '../schema/errors.ts'

export function errorResponse(c: Context, error: TermkeepError): Response {
  return c.json(error.toBody(), error.status)
}

/** libSQL failures that mean "the database is not answering", not a bug in a query. */
const UNAVAILABLE_DB_CODES = /^(SQLITE_BUSY|SQLITE_LOCKED|SQLITE_CANTOPEN|SQLITE_IOERR|SERVER_ERROR|HRANA_\w+|CLIENT_CLOSED|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|UND_ERR_\w+)/

/** Pure: is this (drizzle-wrapped) error the database being unreachable or busy? */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code
    if (typeof code === 'string' && UNAVAILABLE_DB_CODES.test(code)) return true
    // A remote database's transport failing (the sidecar's own failures never reach here raw).
    if (e instanceof TypeError && e.message === 'fetch failed') return true
  }
  return false
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
