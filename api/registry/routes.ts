/** HTTP routes of the workspace registry and sessions (schema/wire/registry.ts). */
import { Hono } from 'hono'
import { describeRoute } from 'hono-openapi'
import { TermkeepError } from '../../schema/errors.ts'
import {
  ArchivedSessions,
  CreateSession,
  CreateWorkspace,
  Deleted,
  MoveRequest,
  RenameWorkspace,
  ResolvedWorkspace,
  ResolveQuery,
  SessionCreated,
  SessionEnvelope,
  SessionList,
  SessionListQuery,
  SessionParams,
  WorkspaceCreated,
  WorkspaceEnvelope,
  WorkspaceList,
  WorkspaceOrder,
  WorkspaceParams,
  WorkspaceSessionParams,
} from '../../schema/wire/registry.ts'
import { guard, openStream } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { error, json, SIDECAR_DOWN, sse } from '../openapi.ts'
import { lastEventId, sseResponse } from '../sse.ts'
import { validate } from '../validate.ts'
import {
  archiveSession,
  createSession,
  createWorkspace,
  deleteWorkspace,
  moveSession,
  moveWorkspace,
  renameWorkspace,
  resolveWorkspace,
  unarchiveSession,
} from './operations.ts'
import { scopeArchived, scopeList } from './scope.ts'
import { listSessions } from '../../storage/registry/sessions.ts'
import { listWorkspaces, sessionById } from '../../storage/registry/workspaces.ts'
import { watchRegistry } from './watch.ts'

const tags = ['workspaces']
const INVALID_PATH = { 400: error('missing, relative or not a directory (`workspace/invalid-path`)') }
const NO_SESSION = { 404: error('no such session, or not one this token may touch (`session/not-found`)') }
/** The confinement of a session-bound token (api/registry/scope.ts, docs/security-workspaces.md). */
const CONFINED =
  'A token bound to some sessions sees only the workspaces that list one of its sessions, and of those only its own session ids; any other workspace is as if absent.'
const NO_WORKSPACE_SEEN = { 404: error('no such workspace, or one this token cannot see (`workspace/not-found`)') }

export const registryRoutes = new Hono<AppEnv>()
  .get(
    '/v1/workspaces',
    describeRoute({
      tags,
      summary: "Workspaces in the user's order, and the archived session ids",
      description: CONFINED,
      responses: { 200: json(WorkspaceList) },
    }),
    guard('workspaces:read'),
    async (c) => c.json(scopeList(c.get('auth'), await listWorkspaces(c.get('deps').db))),
  )
  .post(
    '/v1/workspaces',
    describeRoute({
      tags,
      summary: 'Create a workspace over a directory on a host, or return the one that owns it (`created: false`)',
      description: `A workspace is a directory on one host (\`host\`: an id or a name; default: the only host); the same path on two hosts is two workspaces. Registering a directory needs workspaces:write on a token bound to all sessions. ${CONFINED} Such a token gets back a workspace it can see (\`created: false\`); for any other path, whether it exists or not, it gets the same 403 \`auth/forbidden\`.`,
      responses: {
        201: json(WorkspaceCreated, 'created'),
        200: json(WorkspaceCreated, 'already registered'),
        400: error('missing, relative or not a directory (`workspace/invalid-path`); no such host (`host/unknown`)'),
        403: error('a token bound to some sessions cannot register a directory (`auth/forbidden`, `required`)'),
        409: error('title taken (`workspace/name-conflict`); several hosts and none named (`host/ambiguous`)'),
        ...SIDECAR_DOWN,
      },
    }),
    guard('workspaces:write'),
    validate('json', CreateWorkspace),
    async (c) => {
      const { deps, auth } = c.var
      const result = await createWorkspace(deps.db, c.var.fleet, auth, c.req.valid('json'))
      return c.json(result, result.created ? 201 : 200)
    },
  )
  .get(
    '/v1/workspaces/resolve',
    describeRoute({
      tags,
      summary: 'The workspace owning a directory on a host, without creating one (`workspace: null` when none does)',
      description: `\`host\`: the host the directory is on (default: the only one). ${CONFINED} Only a token that may register directories (workspaces:write, all sessions) is told that a path is missing or not a directory (400); to any other token such a path is \`workspace: null\`, like a directory no workspace it can see owns.`,
      responses: { 200: json(ResolvedWorkspace), ...INVALID_PATH, ...SIDECAR_DOWN },
    }),
    guard('workspaces:read'),
    validate('query', ResolveQuery),
    async (c) => {
      const { deps, auth } = c.var
      return c.json({ workspace: await resolveWorkspace(deps.db, c.var.fleet, auth, c.req.valid('query')) })
    },
  )
  .get(
    '/v1/workspaces/watch',
    describeRoute({
      tags,
      summary: 'Registry changes as SSE',
      description: `One \`baseline\` (id = the newest event sequence), then increments in order, each with id = its sequence. Reconnecting with \`Last-Event-ID\` resumes after that id without a new baseline. ${CONFINED} Such a token's stream leaves out every change it cannot see, and its reconnect starts with a new baseline.`,
      responses: { 200: sse('baseline, then increments', ['baseline', 'upsert', 'remove', 'order', 'archived']) },
    }),
    guard('workspaces:read'),
    async (c) => {
      const { deps, auth } = c.var
      const resume = lastEventId(c.req.header('last-event-id'))
      const tuning = { pollMs: deps.tuning?.registryPollMs, maxPolls: deps.tuning?.registryWatchMaxPolls }
      return openStream(c, (options) => sseResponse((sink) => watchRegistry(deps.db, auth, sink, resume, tuning), options))
    },
  )
  .patch(
    '/v1/workspaces/:wid',
    describeRoute({
      tags,
      summary: 'Rename a workspace (trimmed, non-blank, unique)',
      description: CONFINED,
      responses: { 200: json(WorkspaceEnvelope), ...NO_WORKSPACE_SEEN, 409: error('title taken (`workspace/name-conflict`)') },
    }),
    guard('workspaces:write'),
    validate('param', WorkspaceParams),
    validate('json', RenameWorkspace),
    async (c) => {
      return c.json({ workspace: await renameWorkspace(c.var.deps.db, c.var.auth, c.req.valid('param').wid, c.req.valid('json').title) })
    },
  )
  .delete(
    '/v1/workspaces/:wid',
    describeRoute({
      tags,
      summary: 'Unregister a workspace (nothing on disk changes; sessions stay recorded)',
      description: CONFINED,
      responses: { 200: json(Deleted), ...NO_WORKSPACE_SEEN },
    }),
    guard('workspaces:write'),
    validate('param', WorkspaceParams),
    async (c) => {
      await deleteWorkspace(c.var.deps.db, c.var.auth, c.req.valid('param').wid)
      return c.json({ deleted: true as const })
    },
  )
  .post(
    '/v1/workspaces/:wid/move',
    describeRoute({
      tags,
      summary: 'Move a workspace before another, or to the end; returns the order',
      description: `${CONFINED} Such a token moves only before a workspace it can see, and gets back the order of those it can see.`,
      responses: {
        200: json(WorkspaceOrder),
        ...NO_WORKSPACE_SEEN,
        400: error('unknown anchor, or one this token cannot see (`workspace/move-invalid`)'),
      },
    }),
    guard('workspaces:write'),
    validate('param', WorkspaceParams),
    validate('json', MoveRequest),
    async (c) =>
      c.json({ workspaceIds: await moveWorkspace(c.var.deps.db, c.var.auth, c.req.valid('param').wid, c.req.valid('json').beforeId) }),
  )
  .post(
    '/v1/workspaces/:wid/sessions/:sid/move',
    describeRoute({
      tags,
      summary: "Move a session before another of the workspace's sessions, or to the end",
      description: `${CONFINED} An anchor outside the token's sessions is answered like a missing one.`,
      responses: {
        200: json(WorkspaceEnvelope),
        404: error('no such session or workspace, or one this token may not touch or see (`session/not-found`, `workspace/not-found`)'),
        400: error('not members (`workspace/move-invalid`)'),
      },
    }),
    guard('workspaces:write'),
    validate('param', WorkspaceSessionParams),
    validate('json', MoveRequest),
    async (c) => {
      const { wid, sid } = c.req.valid('param')
      return c.json({ workspace: await moveSession(c.var.deps.db, c.var.auth, wid, sid, c.req.valid('json').beforeId) })
    },
  )
  .get(
    '/v1/sessions',
    describeRoute({
      tags: ['sessions'],
      summary: 'Recorded sessions, newest first, a page at a time (`workspace=none`: those in no workspace)',
      description:
        "Only the sessions the token may touch. `workspace` filters to one workspace's members, or with `none` to the sessions that belong to no workspace; `cursor` is the previous page's `next`.",
      responses: { 200: json(SessionList) },
    }),
    guard('workspaces:read'),
    validate('query', SessionListQuery),
    async (c) => c.json(await listSessions(c.var.deps.db, c.var.auth, c.req.valid('query'))),
  )
  .post(
    '/v1/sessions',
    describeRoute({
      tags: ['sessions'],
      summary: 'Record a session with its cwd, or in a workspace; it joins the workspace owning the canonical cwd on its host',
      description:
        "A session lives on a host: its workspace's (`workspace`), else the one `host` names, else the only host. The same id with the same cwd returns the record (`created: false`); with another cwd it is `session/conflict`. A token bound to some sessions records only an id in its scope (another is 404 `session/not-found`), and only with the cwd of a workspace that lists one of its sessions: any other cwd, existing or not, is 403 `auth/forbidden` (it would make that directory readable to it).",
      responses: {
        201: json(SessionCreated, 'recorded'),
        200: json(SessionCreated, 'already recorded'),
        400: error(
          "missing, relative or not a directory, or not the named workspace's (`workspace/invalid-path`); no such host (`host/unknown`)",
        ),
        403: error('a session-bound token without an id, or with a cwd outside the workspaces it can see (`auth/forbidden`)'),
        404: error('no such workspace, or one this token cannot see (`workspace/not-found`)'),
        409: error(
          "`session/conflict`; several hosts and none named, or a name several share (`host/ambiguous`); a host that is not the workspace's (`host/mismatch`)",
        ),
        ...SIDECAR_DOWN,
      },
    }),
    guard('sessions:write'),
    validate('json', CreateSession),
    async (c) => {
      const { deps, auth } = c.var
      const result = await createSession(deps.db, c.var.fleet, auth, c.req.valid('json'))
      return c.json(result, result.created ? 201 : 200)
    },
  )
  .get(
    '/v1/sessions/:sid',
    describeRoute({ tags: ['sessions'], summary: 'A session record', responses: { 200: json(SessionEnvelope), ...NO_SESSION } }),
    guard('workspaces:read'),
    validate('param', SessionParams),
    async (c) => {
      const session = await sessionById(c.var.deps.db, c.req.valid('param').sid)
      if (!session) throw new TermkeepError('session/not-found', `no session ${c.req.valid('param').sid}`)
      return c.json({ session })
    },
  )
  .post(
    '/v1/sessions/:sid/archive',
    describeRoute({
      tags: ['sessions'],
      summary: 'Archive a session (it keeps its place in its workspace)',
      responses: { 200: json(ArchivedSessions), ...NO_SESSION },
    }),
    guard('workspaces:write'),
    validate('param', SessionParams),
    async (c) => c.json({ archivedSessionIds: scopeArchived(c.var.auth, await archiveSession(c.var.deps.db, c.req.valid('param').sid)) }),
  )
  .delete(
    '/v1/sessions/:sid/archive',
    describeRoute({
      tags: ['sessions'],
      summary: 'Unarchive a session (its old position returns)',
      responses: { 200: json(ArchivedSessions), ...NO_SESSION },
    }),
    guard('workspaces:write'),
    validate('param', SessionParams),
    async (c) => c.json({ archivedSessionIds: scopeArchived(c.var.auth, await unarchiveSession(c.var.deps.db, c.req.valid('param').sid)) }),
  )
