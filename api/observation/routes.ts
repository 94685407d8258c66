/**
 * Terminal observation for agent providers (seed 004; contract in schema/wire/observation.ts).
 * Each route checks the token's grant and session, refuses an environment variable name the token
 * did not declare (403 `observe/undeclared`), then asks the sidecar, which owns every handle and
 * re-derives the terminal, its processes and every path itself. The JSON operations are mounted
 * from OBSERVATION_OPERATIONS, one route per seed method.
 */
import { Hono, type Context } from 'hono'
import { describeRoute } from 'hono-openapi'
import { TermkeepError } from '../../schema/errors.ts'
import {
  capabilitiesOf,
  FOLLOW_EVENTS,
  FollowFileQuery,
  FollowHeaders,
  ObservationContext,
  undeclaredNames,
  WatchDirectoryQuery,
} from '../../schema/wire/observation.ts'
import {
  OBSERVATION_OPERATIONS,
  observationPath,
  type ObservationOperation,
  type ObservationOperationName,
} from '../../schema/wire/observation-operations.ts'
import { TerminalParams } from '../../schema/wire/terminals.ts'
import { guard } from '../auth/guard.ts'
import { observedEnvironmentNames } from '../../storage/tokens.ts'
import type { AppEnv } from '../deps.ts'
import { error, json, SIDECAR_DOWN, sse } from '../openapi.ts'
import { relay } from '../terminals/routes.ts'
import { validate } from '../validate.ts'

const tags = ['observation']
const T = '/v1/sessions/:sid/terminals/:tid'

const ERRORS = {
  400: error('bad request (`request/invalid`): a missing or malformed field, an escaping path, a limit out of range'),
  403: error('the token lacks the grant (`auth/forbidden`), or names an environment variable it did not declare (`observe/undeclared`)'),
  404: error(
    'no such session or terminal (`session/not-found`, `terminal/not-found`), or a handle that is not valid here (`observe/handle-invalid`)',
  ),
  409: error("the terminal's program exited (`observe/not-running`); too many watchers (`observe/limit-reached`)"),
  410: error('the terminal is retired or from an earlier sidecar (`terminal/unavailable`)'),
  ...SIDECAR_DOWN,
}

/** The caller's declared names; 403 for any in `wanted` it lacks. */
async function declaredFor(c: Context<AppEnv>, wanted: readonly string[] = []): Promise<string[]> {
  const declared = await observedEnvironmentNames(c.var.deps.db, c.var.auth.tokenId)
  const missing = undeclaredNames(wanted, new Set(declared))
  if (missing.length > 0) {
    throw new TermkeepError('observe/undeclared', `not declared on this token (observeEnvironment): ${missing.join(', ')}`, {
      names: missing,
    })
  }
  return declared
}

/** The validated query again in its wire form, for the sidecar (which validates it too). */
function wireQuery(c: Context<AppEnv>, keys: readonly string[]): Record<string, string> {
  const query: Record<string, string> = {}
  for (const key of keys) {
    const value = c.req.query(key)
    if (value !== undefined) query[key] = value
  }
  return query
}

export const observationRoutes = new Hono<AppEnv>()
  .get(
    `${T}/observation`,
    describeRoute({
      tags,
      summary: 'Observation context: opaque handles, the foreground process, the tty when proven, and the capabilities of this token',
      responses: { 200: json(ObservationContext), ...ERRORS },
    }),
    guard({ anyOf: ['observe:process', 'observe:files', 'observe:journal'] }),
    validate('param', TerminalParams),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const facts = await (await c.var.fleet.forSession(sid)).observationContext(sid, tid, await declaredFor(c))
      return c.json({ ...facts, capabilities: capabilitiesOf(c.var.auth.grants) })
    },
  )
  .get(
    `${T}/observation/files/watchDirectory`,
    describeRoute({
      tags,
      summary: 'watchDirectory: the listing of a directory handle now, then again after each change',
      responses: { 200: sse('snapshots {entries, truncated}', ['snapshot']), ...ERRORS },
    }),
    guard('observe:files'),
    validate('param', TerminalParams),
    validate('query', WatchDirectoryQuery),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const query = wireQuery(c, ['root', 'extensions', 'maxDepth', 'maxEntries', 'maxBytes'])
      const declared = await declaredFor(c)
      return relay(c, async (signal) => (await c.var.fleet.forSession(sid)).watchDirectory(sid, tid, query, declared, signal))
    },
  )
  .get(
    `${T}/observation/files/follow`,
    describeRoute({
      tags,
      summary:
        "follow: a file handle's bytes as they are written; `truncate` / `replace` restart the content at offset 0. " +
        'Each event id is a cursor: `after=` it (or Last-Event-ID) resumes right after that event',
      responses: { 200: sse('chunks {offset, bytes (base64)} of at most 64 KiB, id = the cursor after it', FOLLOW_EVENTS), ...ERRORS },
    }),
    guard('observe:journal'),
    validate('param', TerminalParams),
    validate('query', FollowFileQuery),
    validate('header', FollowHeaders),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const query = wireQuery(c, ['handle', 'maxChunkBytes', 'after'])
      const resume = c.req.valid('header')['last-event-id'] || undefined
      const declared = await declaredFor(c)
      return relay(c, async (signal) => (await c.var.fleet.forSession(sid)).followFile(sid, tid, query, declared, signal, resume))
    },
  )

for (const [name, operation] of Object.entries(OBSERVATION_OPERATIONS) as [ObservationOperationName, ObservationOperation][]) {
  observationRoutes.post(
    `${T}/${observationPath(name)}`,
    describeRoute({ tags, summary: `${name}: ${operation.summary}`, responses: { 200: json(operation.response), ...ERRORS } }),
    guard(operation.grant),
    validate('param', TerminalParams),
    validate('json', operation.request),
    async (c) => {
      const { sid, tid } = c.req.valid('param')
      const request = c.req.valid('json') as Record<string, unknown>
      const declared = await declaredFor(c, operation.environmentNames?.(request))
      const upstream = await (await c.var.fleet.forSession(sid)).observe(sid, tid, name, request as never, declared)
      // The sidecar's JSON as it came: its shape is the contract (schema/wire/observation.ts).
      return new Response(upstream.body, { status: upstream.status, headers: { 'content-type': 'application/json' } })
    },
  )
}
