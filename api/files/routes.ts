/**
 * Workspace files, Files.readText and the session resources it reads. The file routes check the
 * token and session here, then ask the sidecar, which re-derives the session's bound workspace
 * itself and confines every path to it (schema/wire/files.ts has the contract).
 */
import { Hono, type Context } from 'hono'
import { describeRoute } from 'hono-openapi'
import * as v from 'valibot'
import { SessionId } from '../../schema/wire/common.ts'
import {
  BytesQuery,
  DirectoryListing,
  EmptyQuery,
  FileBytes,
  FileStat,
  FileText,
  ListQuery,
  MAX_RESOURCE_BODY_BYTES,
  PathQuery,
  ReadTextPage,
  ReadTextRequest,
  RelatedQuery,
  StoreAttachment,
  StoredResource,
  StoreToolResult,
  TextQuery,
} from '../../schema/wire/files.ts'
import { guard, openStream } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { error, json, SIDECAR_DOWN, sse } from '../openapi.ts'
import { relaySSE } from '../sse.ts'
import { validate } from '../validate.ts'
import { readText, type ResourceKind } from '../../common/files/read-text.ts'
import { resourceBytes, storeAttachment, storeToolResult } from '../../storage/resources.ts'

const tags = ['files']
const SessionOnly = v.object({ sid: SessionId })
const badQuery = { code: 'files/bad-request' as const }

const FILE_ERRORS = {
  400: error('`files/bad-request`, `files/not-regular-file` {kind}, `files/not-directory` {kind}, `files/not-text`'),
  403: error('the path leaves the workspace (`files/outside-workspace`), or the token lacks `files:read`'),
  404: error(
    'unknown session or not yours (`session/not-found`), session bound to no workspace (`workspace/not-found`), `files/not-found`',
  ),
  413: error('`files/too-large` {limit}: ask for fewer lines, or use a byte window'),
  ...SIDECAR_DOWN,
}

function sid(c: Context<AppEnv>): string {
  return c.req.param('sid')!
}

/** The sidecar's JSON as it came (its shape is the contract in schema/wire/files.ts). */
function passOn(upstream: Response): Response {
  return new Response(upstream.body, { status: upstream.status, headers: { 'content-type': 'application/json' } })
}

export const fileRoutes = new Hono<AppEnv>()
  .get(
    '/v1/sessions/:sid/files/text',
    describeRoute({
      tags,
      summary: 'A page of UTF-8 lines (1-based offset, at most 5,000 lines and 2 MiB)',
      responses: { 200: json(FileText), ...FILE_ERRORS },
    }),
    guard('files:read'),
    validate('param', SessionOnly),
    validate('query', TextQuery, badQuery),
    async (c) => passOn(await (await c.var.fleet.forSession(sid(c))).fileResponse(sid(c), 'text', c.req.valid('query'))),
  )
  .get(
    '/v1/sessions/:sid/files/bytes',
    describeRoute({
      tags,
      summary: 'A base64 byte window (0-based offset, at most 2 MiB)',
      responses: { 200: json(FileBytes), ...FILE_ERRORS },
    }),
    guard('files:read'),
    validate('param', SessionOnly),
    validate('query', BytesQuery, badQuery),
    async (c) => passOn(await (await c.var.fleet.forSession(sid(c))).fileResponse(sid(c), 'bytes', c.req.valid('query'))),
  )
  .get(
    '/v1/sessions/:sid/files/all',
    describeRoute({ tags, summary: 'The whole file, base64, at most 32 MiB', responses: { 200: json(FileBytes), ...FILE_ERRORS } }),
    guard('files:read'),
    validate('param', SessionOnly),
    validate('query', PathQuery, badQuery),
    async (c) => passOn(await (await c.var.fleet.forSession(sid(c))).fileResponse(sid(c), 'all', c.req.valid('query'))),
  )
  .get(
    '/v1/sessions/:sid/files/related',
    describeRoute({
      tags,
      summary: "A whole file at a path relative to another file's directory (no absolute paths, URLs or NUL)",
      responses: { 200: json(FileBytes), ...FILE_ERRORS },
    }),
    guard('files:read'),
    validate('param', SessionOnly),
    validate('query', RelatedQuery, badQuery),
    async (c) => passOn(await (await c.var.fleet.forSession(sid(c))).fileResponse(sid(c), 'related', c.req.valid('query'))),
  )
  .get(
    '/v1/sessions/:sid/files/stat',
    describeRoute({ tags, summary: 'Kind, opaque version and size', responses: { 200: json(FileStat), ...FILE_ERRORS } }),
    guard('files:read'),
    validate('param', SessionOnly),
    validate('query', PathQuery, badQuery),
    async (c) => passOn(await (await c.var.fleet.forSession(sid(c))).fileResponse(sid(c), 'stat', c.req.valid('query'))),
  )
  .get(
    '/v1/sessions/:sid/files/list',
    describeRoute({
      tags,
      summary: 'Direct children in stable name order, at most 2,000 (`truncated`)',
      responses: { 200: json(DirectoryListing), ...FILE_ERRORS },
    }),
    guard('files:read'),
    validate('param', SessionOnly),
    validate('query', ListQuery, badQuery),
    async (c) => passOn(await (await c.var.fleet.forSession(sid(c))).fileResponse(sid(c), 'list', c.req.valid('query'))),
  )
  .get(
    '/v1/sessions/:sid/files/changes',
    describeRoute({
      tags,
      summary: 'SSE: `ready` once observing, then `change` {path, version | absent, source: termkeep | os} in order',
      responses: { 200: sse('File changes in the workspace', ['ready', 'change']), ...FILE_ERRORS },
    }),
    guard('files:read'),
    validate('param', SessionOnly),
    validate('query', EmptyQuery, badQuery),
    (c) =>
      openStream(c, async (options) => {
        const upstream = new AbortController()
        const response = await (await c.var.fleet.forSession(sid(c))).fileChanges(sid(c), upstream.signal)
        return relaySSE(response, () => upstream.abort(), options)
      }),
  )
  .post(
    '/v1/sessions/:sid/read-text',
    describeRoute({
      tags,
      summary: 'Files.readText: a page of a workspace file, `attachment:ID` or `tool-result:ID`; send `next` back whole to continue',
      description:
        'A `next` is bound to this session and the token that received it; an altered or foreign one is answered like a missing resource (404 `resource/not-found`).',
      responses: {
        200: json(ReadTextPage),
        ...FILE_ERRORS,
        404: error('`resource/not-found`, `files/not-found`, `workspace/not-found`, `session/not-found`'),
      },
    }),
    guard('files:read'),
    validate('param', SessionOnly),
    validate('json', ReadTextRequest),
    async (c) => {
      const binding = { sessionId: sid(c), tokenId: c.var.auth.tokenId }
      const { db } = c.var.deps
      // Stored resources are read while the session's host is down: its client is only a key then.
      const sidecar = c.var.fleet.forSession(binding.sessionId, { whenDown: 'client' })
      const source = {
        signingKey: async (purpose: string) => (await sidecar).signingKey(purpose),
        readFileText: async (sessionId: string, query: TextQuery) => (await sidecar).readFileText(sessionId, query),
        resourceBytes: (sessionId: string, kind: ResourceKind, id: string) => resourceBytes(db, sessionId, kind, id),
      }
      return c.json(await readText(source, binding, c.req.valid('json')))
    },
  )
  .post(
    '/v1/sessions/:sid/attachments',
    describeRoute({
      tags,
      summary: 'Store an attachment (UTF-8 or base64 content, at most 32 MiB); read it as `attachment:ID`',
      responses: { 201: json(StoredResource, 'stored'), 413: error('`request/too-large`') },
    }),
    guard('sessions:write'),
    validate('param', SessionOnly),
    validate('json', StoreAttachment, { maxBytes: MAX_RESOURCE_BODY_BYTES }),
    async (c) => c.json(await storeAttachment(c.var.deps.db, sid(c), c.req.valid('json')), 201),
  )
  .post(
    '/v1/sessions/:sid/tool-results',
    describeRoute({
      tags,
      summary: 'Archive a tool result (text, at most 32 MiB); read it as `tool-result:ID`',
      responses: { 201: json(StoredResource, 'stored'), 413: error('`request/too-large`') },
    }),
    guard('sessions:write'),
    validate('param', SessionOnly),
    validate('json', StoreToolResult, { maxBytes: MAX_RESOURCE_BODY_BYTES }),
    async (c) => c.json(await storeToolResult(c.var.deps.db, sid(c), c.req.valid('json')), 201),
  )
