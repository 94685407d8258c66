/**
 * Request validation, one way for every route: hono-openapi's Standard Schema `validator` (so the
 * same valibot schema validates and documents), with the failure turned into the one error shape
 * `{error:{code:'request/invalid',message}}` (400) instead of the library's default body. JSON
 * bodies are size-checked first (413 `request/too-large`) so a huge body is never parsed.
 *
 *   routes.post('/v1/x/:id', describeRoute({...}), guard('...'), validate('param', P),
 *     validate('json', Body), (c) => c.json(handle(c.req.valid('json'))))
 */
import type { StandardSchemaV1 } from '@standard-schema/spec'
import type { Env, MiddlewareHandler, ValidationTargets } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { uniqueSymbol, validator } from 'hono-openapi'
import { TermkeepError, type ErrorCode } from '../schema/errors.ts'
import { MAX_JSON_BODY_BYTES } from '../schema/limits.ts'

export interface ValidateOptions {
  /** The error code for a failure (default `request/invalid`); e.g. `terminal/invalid-geometry`. */
  code?: ErrorCode | ((issues: readonly StandardSchemaV1.Issue[]) => ErrorCode)
  /** JSON only: the largest accepted body (default MAX_JSON_BODY_BYTES). */
  maxBytes?: number
}

function pathOf(issue: StandardSchemaV1.Issue): string {
  if (!issue.path || issue.path.length === 0) return ''
  return issue.path.map((p) => String(typeof p === 'object' ? p.key : p)).join('.')
}

/** Pure: a short readable message for a set of issues ("cols: Invalid value; rows: …"). */
export function describeIssues(target: string, issues: readonly StandardSchemaV1.Issue[]): string {
  const parts = issues.slice(0, 5).map((issue) => {
    const path = pathOf(issue)
    return path ? `${path}: ${issue.message}` : issue.message
  })
  return `invalid ${target === 'param' ? 'path parameter' : target}: ${parts.join('; ')}`
}

/** Issues whose first path key is one of `keys`, or that sit on the whole object (a cross check). */
export function issuesTouch(issues: readonly StandardSchemaV1.Issue[], keys: readonly string[]): boolean {
  return issues.some((issue) => {
    const first = issue.path?.[0]
    if (first === undefined) return true
    return keys.includes(String(typeof first === 'object' ? first.key : first))
  })
}

export function tooLarge(limit: number): TermkeepError {
  return new TermkeepError('request/too-large', `the request body is larger than ${limit} bytes`, { limit })
}

/**
 * hono/body-limit with a declared Content-Length checked first. bodyLimit itself reads
 * `c.req.raw.body` before it looks at the header, and on @hono/node-server that getter builds a
 * whole web Request around a stream of the Node request: measured ~0.3 ms of every keystroke's
 * input request here. A declared length (without Transfer-Encoding) is the body's length by HTTP
 * framing, so it decides alone, exactly as bodyLimit would; anything else goes to bodyLimit, which
 * counts the bytes as they are read.
 */
export function sizeLimit(maxSize: number, onTooLarge: () => never | Promise<never>): MiddlewareHandler {
  const counted = bodyLimit({ maxSize, onError: onTooLarge })
  return async (c, next) => {
    const declared = c.req.header('content-length')
    if (declared === undefined || c.req.header('transfer-encoding') !== undefined) return counted(c, next)
    if (Number.parseInt(declared, 10) > maxSize) return onTooLarge()
    await next()
  }
}

/** application/json or application/<x>+json, with or without parameters (charset). */
const JSON_MEDIA_TYPE = /^application\/([\w.-]+\+)?json\s*(;|$)/i

export function validate<S extends StandardSchemaV1, T extends keyof ValidationTargets, E extends Env = Env, P extends string = string>(
  target: T,
  schema: S,
  options: ValidateOptions = {},
) {
  const inner = validator<S, T, E, P>(target, schema, (result) => {
    if (result.success) return
    const issues = result.error as readonly StandardSchemaV1.Issue[]
    const code = typeof options.code === 'function' ? options.code(issues) : (options.code ?? 'request/invalid')
    throw new TermkeepError(code, describeIssues(target, issues))
  })
  if (target !== 'json') return inner
  const limit = options.maxBytes ?? MAX_JSON_BODY_BYTES
  const sizeCheck = sizeLimit(limit, () => Promise.reject(tooLarge(limit)))
  const composed = (async (c, next) => {
    // hono's validator reads a body of another media type as `{}`: a JSON body sent as text/plain
    // or a form would run the route with every field missing (a move would go to the end).
    // A body is known empty only by `Content-Length: 0`; without a Content-Type, only a declared
    // or chunked body counts (a Request made in-process labels a string body text/plain itself).
    const length = c.req.header('content-length')
    const type = c.req.header('content-type')
    const sent = type !== undefined ? length !== '0' : Number(length ?? 0) > 0 || c.req.header('transfer-encoding') !== undefined
    if (sent && !JSON_MEDIA_TYPE.test(type ?? '')) {
      throw new TermkeepError('request/invalid', 'the body must be JSON, sent with Content-Type: application/json')
    }
    await sizeCheck(c, async () => {
      await inner(c, next)
    })
  }) as typeof inner
  // Keep the OpenAPI description the inner validator carries.
  return Object.assign(composed, { [uniqueSymbol]: (inner as unknown as Record<symbol, unknown>)[uniqueSymbol] })
}

/** Marks a middleware with extra OpenAPI operation facts (merged like describeRoute's). */
export function documented<M extends MiddlewareHandler>(middleware: M, spec: Record<string, unknown>): M {
  return Object.assign(middleware, { [uniqueSymbol]: { spec } })
}
