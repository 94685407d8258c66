/**
 * The workspace registry and session contract (API only; the registry lives in libSQL).
 *
 *   GET    /v1/workspaces                              → WorkspaceList
 *   POST   /v1/workspaces              CreateWorkspace → WorkspaceCreated (201 new, 200 existing)
 *   GET    /v1/workspaces/resolve?path=               → ResolvedWorkspace
 *   PATCH  /v1/workspaces/:wid         RenameWorkspace → {workspace}
 *   DELETE /v1/workspaces/:wid                         → {deleted: true}
 *   POST   /v1/workspaces/:wid/move    MoveRequest     → WorkspaceOrder
 *   GET    /v1/workspaces/watch                        SSE: baseline, upsert, remove, order, archived
 *   GET    /v1/sessions?workspace=&limit=&cursor=     → SessionList (newest first, the token's only)
 *   POST   /v1/sessions                CreateSession   → SessionCreated (201 new, 200 existing)
 *   GET    /v1/sessions/:sid                           → {session}
 *   POST   /v1/workspaces/:wid/sessions/:sid/move  MoveRequest → {workspace}
 *   POST   /v1/sessions/:sid/archive                   → ArchivedSessions
 *   DELETE /v1/sessions/:sid/archive                   → ArchivedSessions
 *
 * Watch: `baseline` (a WorkspaceList, id = the newest event sequence) then increments in event
 * order, each with id = its sequence. A client reconnecting with Last-Event-ID gets no new
 * baseline, only the increments after that id.
 */
import * as v from 'valibot'
import { MAX_SESSION_PAGE, MAX_WORKSPACE_TITLE_CHARS } from '../limits.ts'
import { pageLimit, SessionId, titleSchema } from './common.ts'
import { HostSelector } from './hosts.ts'
import { Name } from './terminals.ts'
import { AbsolutePath } from './paths.ts'

export const WorkspaceId = v.pipe(v.string(), v.regex(/^[\w-]{1,128}$/, 'workspace ids are 1–128 of [A-Za-z0-9_-]'))

export const WorkspaceTitle = titleSchema(MAX_WORKSPACE_TITLE_CHARS, 'workspace titles')

export const Workspace = v.object({
  id: v.string(),
  /** Canonical (realpath) directory. */
  path: v.string(),
  title: v.string(),
  /** The host the directory is on (GET /v1/hosts); null for a workspace recorded before hosts on a
   * database that already had several, until a host claims it. */
  host: v.nullable(v.string()),
  /** Member sessions in the user's order (listed and cwd matching `path`). */
  sessionIds: v.array(v.string()),
  createdAt: v.number(),
  updatedAt: v.number(),
})
export type Workspace = v.InferOutput<typeof Workspace>

export const WorkspaceList = v.object({ workspaces: v.array(Workspace), archivedSessionIds: v.array(v.string()) })
export type WorkspaceList = v.InferOutput<typeof WorkspaceList>

/** `host`: the host the directory is on (an id, or a name no other host has); default: the only
 * host (with several, 409 `host/ambiguous`). A path is unique per host, not across hosts. */
export const CreateWorkspace = v.object({ path: AbsolutePath, title: v.optional(WorkspaceTitle), host: v.optional(HostSelector) })
export const WorkspaceCreated = v.object({ workspace: Workspace, created: v.boolean() })
export const ResolveQuery = v.object({ path: AbsolutePath, host: v.optional(HostSelector) })
/** `workspace` is null when the directory exists but no workspace owns it. */
export const ResolvedWorkspace = v.object({ workspace: v.nullable(Workspace) })
export const RenameWorkspace = v.object({ title: WorkspaceTitle })
export const WorkspaceEnvelope = v.object({ workspace: Workspace })
export const Deleted = v.object({ deleted: v.literal(true) })
/** Move before `beforeId`, or to the end when it is absent. */
export const MoveRequest = v.object({ beforeId: v.optional(v.string()) })
export const WorkspaceOrder = v.object({ workspaceIds: v.array(v.string()) })
export const WorkspaceParams = v.object({ wid: WorkspaceId })
export const WorkspaceSessionParams = v.object({ wid: WorkspaceId, sid: SessionId })
export const SessionParams = v.object({ sid: SessionId })

export const Session = v.object({
  id: SessionId,
  /** Canonical working directory. */
  cwd: v.string(),
  title: v.nullable(v.string()),
  /** A name people type (`termkeep attach api`), unique across sessions; null: none. */
  name: v.nullable(v.string()),
  /** The workspace the session belongs to, if any. */
  workspaceId: v.nullable(v.string()),
  archived: v.boolean(),
  createdAt: v.number(),
  /** The host its terminals and files live on (GET /v1/hosts); null for a session recorded
   * before hosts, which lives on the API's configured sidecar. */
  host: v.nullable(v.string()),
})
export type Session = v.InferOutput<typeof Session>

export const CreateSession = v.pipe(
  v.object({
    id: v.optional(SessionId),
    /** Its working directory; default (with `workspace`): the workspace's. */
    cwd: v.optional(AbsolutePath),
    title: v.optional(WorkspaceTitle),
    /** The workspace to record it in: the session lives on the workspace's host, in its directory
     * (a `cwd` that is another directory is 400 `workspace/invalid-path`). */
    workspace: v.optional(WorkspaceId),
    /** The host to record it on: an id, or a name no other host has; default: the workspace's
     * host, else the only host (with
     * several, 409 `host/ambiguous`; an unknown one is 400 `host/unknown`; one that is not the
     * workspace's, 409 `host/mismatch`). */
    host: v.optional(HostSelector),
    /** A name people type, unique across sessions (409 `name/conflict` when taken). */
    name: v.optional(Name),
  }),
  v.check((s) => s.cwd !== undefined || s.workspace !== undefined, 'give a cwd or a workspace'),
)
export type CreateSession = v.InferOutput<typeof CreateSession>
/** A new title, name (null removes it), or both. */
export const RenameSession = v.pipe(
  v.object({ title: v.optional(WorkspaceTitle), name: v.optional(v.nullable(Name)) }),
  v.check((r) => r.title !== undefined || r.name !== undefined, 'give a title or a name'),
)
export type RenameSession = v.InferOutput<typeof RenameSession>
export const SessionCreated = v.object({ session: Session, created: v.boolean() })
export const SessionEnvelope = v.object({ session: Session })

/** `workspace=none` for the sessions that belong to no workspace. */
export const NO_WORKSPACE = 'none'
export const SessionListQuery = v.object({
  /** Only the members of this workspace, or (`none`) the sessions that belong to none. */
  workspace: v.optional(WorkspaceId),
  limit: v.optional(pageLimit(MAX_SESSION_PAGE)),
  /** `next` of the previous page, sent back as it came. */
  cursor: v.optional(v.pipe(v.string(), v.regex(/^\d{1,15}\.[\w-]{1,128}$/, 'cursor is the `next` of a previous page'))),
})
export type SessionListQuery = v.InferOutput<typeof SessionListQuery>
/** Newest first; `next` continues after the last one (null on the last page). */
export const SessionList = v.object({ sessions: v.array(Session), next: v.nullable(v.string()) })
export type SessionList = v.InferOutput<typeof SessionList>
export const ArchivedSessions = v.object({ archivedSessionIds: v.array(v.string()) })

/** Watch increments, as stored in registry_events and sent on the stream. */
export type RegistryIncrement =
  | { kind: 'upsert'; payload: { workspace: Workspace } }
  | { kind: 'remove'; payload: { workspaceId: string } }
  | { kind: 'order'; payload: { workspaceIds: string[] } }
  | { kind: 'archived'; payload: { archivedSessionIds: string[] } }
