/**
 * Request validation, one way for every route: hono-openapi's Standard Schema `validator` (so the
 * same valibot schema validates and documents), with the failure turned into the one error shape
 * `{error:{code:'request/invalid',message}}` (400) instead of the library's default body. JSON
 * bodies are size-checked first (413 `request/too-large`) so a huge body is never parsed, then
 * checked as UTF-8, an object and not nested deeper than MAX_JSON_DEPTH before they are parsed.
 *
 *   routes.post('/v1/x/:id', describeRoute({...}), guard('...'), validate('param', P),
 *     validate('json', Body), (c) => c.json(handle(c.req.valid('json'))))
 */
import type { StandardSchemaV1 } from '@standard-schema/spec'
import type { Context, Env, MiddlewareHandler, ValidationTargets } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { uniqueSymbol, validator } from 'hono-openapi'
import { TermkeepError, type ErrorCode } from '../schema/errors.ts'
import { MAX_JSON_BODY_BYTES, MAX_JSON_DEPTH } from '../schema/limits.ts'
import { CONTENT_SLICE_SIZE } from '../common/bytes.ts'
import { yieldToLoop } from '../common/event-loop.ts'

export interface ValidateOptions {
  /** The error code for a failure (default `request/invalid`); e.g. `terminal/invalid-geometry`. */
  code?: ErrorCode | ((issues: readonly StandardSchemaV1.Issue[]) => ErrorCode)
  /** JSON only: the largest accepted body (default MAX_JSON_BODY_BYTES). */
  maxBytes?: number
  /** JSON only: the body may also be an array (a JSON-RPC batch); otherwise only an object. */
  arrays?: boolean
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
const CHARSET_PARAM = /;\s*charset\s*=\s*"?([^";\s]*)/i
const UTF8 = new TextDecoder('utf-8', { fatal: true })

const QUOTE = 0x22
const BACKSLASH = 0x5c

/**
 * Pure: what is wrong with a JSON request body before it is parsed, or undefined. Every request
 * body is an object (valibot's object schema also takes an array, so `[]` would pass as `{}`),
 * nested at most `maxDepth` deep: JSON.parse has no depth bound, and a deep body costs seconds and
 * gigabytes before any schema sees it. Malformed JSON is left to the parser.
 * Written here because no kept library bounds nesting without parsing first. A byte scan: the
 * structural characters are ASCII, which never occurs inside a UTF-8 sequence; strings are
 * skipped with indexOf to their closing quote (one preceded by an even run of backslashes).
 */
export function jsonBodyProblem(bytes: Uint8Array, maxDepth: number, arrays = false): string | undefined {
  let at = bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf ? 3 : 0 // a BOM
  while (at < bytes.length && (bytes[at] === 0x20 || bytes[at] === 0x09 || bytes[at] === 0x0a || bytes[at] === 0x0d)) at++
  if (at === bytes.length) return undefined
  if (bytes[at] !== 0x7b && !(arrays && bytes[at] === 0x5b))
    return arrays ? 'the body must be a JSON object or array' : 'the body must be a JSON object'
  let depth = 0
  for (; at < bytes.length; at++) {
    const byte = bytes[at]
    if (byte === QUOTE) {
      let end = bytes.indexOf(QUOTE, at + 1)
      while (end !== -1) {
        let slashes = 0
        while (bytes[end - 1 - slashes] === BACKSLASH) slashes++
        if (slashes % 2 === 0) break
        end = bytes.indexOf(QUOTE, end + 1)
      }
      if (end === -1) return undefined // unterminated: the parser says so
      at = end
    } else if (byte === 0x7b || byte === 0x5b) {
      if (++depth > maxDepth) return `the body is nested more than ${maxDepth} levels deep`
    } else if (byte === 0x7d || byte === 0x5d) {
      depth--
    }
  }
  return undefined
}

/** Strict UTF-8 decoding of a large body, slice by slice with a yield between (non-ASCII text
 * decodes at ~5 ms/MiB: a 32 MiB attachment in one call held the loop for 0.2 s). */
async function decodeInSlices(bytes: Uint8Array): Promise<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true })
  const parts: string[] = []
  for (let at = 0; at < bytes.length; at += CONTENT_SLICE_SIZE) {
    await yieldToLoop()
    const end = Math.min(at + CONTENT_SLICE_SIZE, bytes.length)
    parts.push(decoder.decode(bytes.subarray(at, end), { stream: end < bytes.length }))
  }
  return parts.join('')
}

/**
 * Reads a JSON body once, as bytes: it must be UTF-8 (RFC 8259; a charset parameter naming another
 * is refused, invalid bytes are not replaced by U+FFFD) and pass jsonBodyProblem. The decoded text
 * is left in hono's body cache, so the validator's `c.req.json()` parses it without reading or
 * decoding the body again. A large body (a 32 MiB attachment is a 43 MB body) yields to the event
 * loop between the steps, each tens of milliseconds, so no step adds to the next one's stall.
 * Says whether the body was large.
 */
async function checkJsonBody(c: Context, arrays: boolean): Promise<boolean> {
  const charset = CHARSET_PARAM.exec(c.req.header('content-type') ?? '')?.[1]?.toLowerCase()
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new TermkeepError('request/invalid', `JSON bodies are UTF-8; charset=${charset} is not accepted`)
  }
  const bytes = new Uint8Array(await c.req.arrayBuffer())
  const large = bytes.length > MAX_JSON_BODY_BYTES
  let text: string
  try {
    text = large ? await decodeInSlices(bytes) : UTF8.decode(bytes)
  } catch {
    throw new TermkeepError('request/invalid', 'the body is not valid UTF-8')
  }
  if (large) await yieldToLoop()
  const problem = jsonBodyProblem(bytes, MAX_JSON_DEPTH, arrays)
  if (problem) throw new TermkeepError('request/invalid', problem)
  if (large)
    await yieldToLoop()
    // hono keeps each body form as a promise here (typed as the value); `json()` parses `text`.
  ;(c.req.bodyCache as Record<string, unknown>).text = Promise.resolve(text)
  return large
}

/** The query field an EventSource's ticket travels in: guard's (auth/guard.ts), not the route's. */
const TICKET_FIELD = 'ticket'

/** `schema` over the query without its ticket, so a strict query schema never refuses one. */
function withoutTicket<S extends StandardSchemaV1>(schema: S): S {
  const standard = schema['~standard']
  const validate = (value: unknown) => {
    if (typeof value !== 'object' || value === null || !(TICKET_FIELD in value)) return standard.validate(value)
    const { [TICKET_FIELD]: _, ...rest } = value as Record<string, unknown>
    return standard.validate(rest)
  }
  return { '~standard': { ...standard, validate } } as unknown as S
}

export function validate<S extends StandardSchemaV1, T extends keyof ValidationTargets, E extends Env = Env, P extends string = string>(
  target: T,
  schema: S,
  options: ValidateOptions = {},
) {
  const hook = (result: { success: boolean; error?: unknown }) => {
    if (result.success) return
    const issues = result.error as readonly StandardSchemaV1.Issue[]
    const code = typeof options.code === 'function' ? options.code(issues) : (options.code ?? 'request/invalid')
    throw new TermkeepError(code, describeIssues(target, issues))
  }
  if (target === 'query') {
    const checking = validator<S, T, E, P>(target, withoutTicket(schema), hook)
    // Documented from the route's own schema (the ticket is documented with the tickets route).
    const documenting = validator<S, T, E, P>(target, schema, hook) as unknown as Record<symbol, unknown>
    return Object.assign(checking, { [uniqueSymbol]: documenting[uniqueSymbol] })
  }
  const inner = validator<S, T, E, P>(target, schema, hook)
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
      const large = sent && (await checkJsonBody(c, options.arrays ?? false))
      // Parsing a large body took the loop for a while: let others run before the route does.
      const afterYield = async () => {
        await yieldToLoop()
        await next()
      }
      await inner(c, large ? afterYield : next)
    })
  }) as typeof inner
  // Keep the OpenAPI description the inner validator carries.
  return Object.assign(composed, { [uniqueSymbol]: (inner as unknown as Record<symbol, unknown>)[uniqueSymbol] })
}

/** Marks a middleware with extra OpenAPI operation facts (merged like describeRoute's). */
export function documented<M extends MiddlewareHandler>(middleware: M, spec: Record<string, unknown>): M {
  return Object.assign(middleware, { [uniqueSymbol]: { spec } })
}
