/**
 * Registry reads and the mutation envelope. Every mutation runs in one write transaction (SQLite
 * serializes writers across processes and API instances), appends its watch increments to
 * `registry_events` in that same transaction, and is committed before the caller answers.
 * Within one process mutations also queue behind each other, so a busy retry is rare.
 */
import { and, asc, desc, eq, gt, isNull, lte, or, sql } from 'drizzle-orm'
import { TermkeepError } from '../../schema/errors.ts'
import { REGISTRY_EVENTS_KEPT } from '../../schema/limits.ts'
import { archivedSessions, registryEvents, sessions, workspaces, workspaceSessions } from '../tables.ts'
import type { RegistryIncrement, Session, Workspace, WorkspaceList } from '../../schema/wire/registry.ts'
import type { Database } from '../client.ts'

export type Tx = Parameters<Parameters<Database['transaction']>[0]>[0]
export type Queryable = Database | Tx

// ── Reads ───────────────────────────────────────────────────────────────────

type WorkspaceRow = typeof workspaces.$inferSelect

/** Member session ids per workspace, in order: listed *and* cwd equal to the workspace path. */
async function membersOf(q: Queryable, workspaceId?: string): Promise<Map<string, string[]>> {
  const rows = await q
    .select({ workspaceId: workspaceSessions.workspaceId, sessionId: workspaceSessions.sessionId })
    .from(workspaceSessions)
    .innerJoin(workspaces, eq(workspaces.id, workspaceSessions.workspaceId))
    .innerJoin(sessions, and(eq(sessions.id, workspaceSessions.sessionId), eq(sessions.cwd, workspaces.path)))
    .where(workspaceId === undefined ? undefined : eq(workspaceSessions.workspaceId, workspaceId))
    .orderBy(asc(workspaceSessions.position), asc(workspaceSessions.sessionId))
  const members = new Map<string, string[]>()
  for (const row of rows) {
    const list = members.get(row.workspaceId) ?? []
    list.push(row.sessionId)
    members.set(row.workspaceId, list)
  }
  return members
}

function view(row: WorkspaceRow, sessionIds: string[]): Workspace {
  const { id, path, title, hostId: host, createdAt, updatedAt } = row
  return { id, path, title, host, sessionIds, createdAt, updatedAt }
}

export async function workspaceById(q: Queryable, id: string): Promise<Workspace | undefined> {
  const [row] = await q.select().from(workspaces).where(eq(workspaces.id, id)).limit(1)
  if (!row) return undefined
  return view(row, (await membersOf(q, id)).get(id) ?? [])
}

export async function requireWorkspace(q: Queryable, id: string): Promise<Workspace> {
  const workspace = await workspaceById(q, id)
  if (!workspace) throw new TermkeepError('workspace/not-found', `no workspace ${id}`, { workspaceId: id })
  return workspace
}

/**
 * The workspace of `path` on `hostId`: one of that host, else one recorded before workspaces had
 * hosts (null host), which stands for whichever host names it. `hostId` null (no host registered
 * yet): the path's workspace whatever its host.
 */
export async function workspaceByPath(q: Queryable, path: string, hostId: string | null): Promise<Workspace | undefined> {
  const onHost = hostId === null ? undefined : or(eq(workspaces.hostId, hostId), isNull(workspaces.hostId))
  const [row] = await q
    .select({ id: workspaces.id })
    .from(workspaces)
    .where(and(eq(workspaces.path, path), onHost))
    .orderBy(sql`${workspaces.hostId} IS NULL`, asc(workspaces.id))
    .limit(1)
  return row ? workspaceById(q, row.id) : undefined
}

export async function workspaceOrder(q: Queryable): Promise<string[]> {
  const rows = await q.select({ id: workspaces.id }).from(workspaces).orderBy(asc(workspaces.position), asc(workspaces.id))
  return rows.map((r) => r.id)
}

export async function archivedIds(q: Queryable): Promise<string[]> {
  const rows = await q
    .select({ id: archivedSessions.sessionId })
    .from(archivedSessions)
    .orderBy(asc(archivedSessions.archivedAt), asc(archivedSessions.sessionId))
  return rows.map((r) => r.id)
}

export async function listWorkspaces(q: Queryable): Promise<WorkspaceList> {
  const [rows, members, archived] = [
    await q.select().from(workspaces).orderBy(asc(workspaces.position), asc(workspaces.id)),
    await membersOf(q),
    await archivedIds(q),
  ]
  return { workspaces: rows.map((row) => view(row, members.get(row.id) ?? [])), archivedSessionIds: archived }
}

export async function sessionById(q: Queryable, id: string): Promise<Session | undefined> {
  const [row] = await q.select().from(sessions).where(eq(sessions.id, id)).limit(1)
  if (!row) return undefined
  const [member] = await q
    .select({ workspaceId: workspaceSessions.workspaceId })
    .from(workspaceSessions)
    .innerJoin(workspaces, eq(workspaces.id, workspaceSessions.workspaceId))
    .where(and(eq(workspaceSessions.sessionId, id), eq(workspaces.path, row.cwd)))
    .limit(1)
  const [archived] = await q.select().from(archivedSessions).where(eq(archivedSessions.sessionId, id)).limit(1)
  return {
    id: row.id,
    cwd: row.cwd,
    title: row.title,
    name: row.name,
    workspaceId: member?.workspaceId ?? null,
    archived: archived !== undefined,
    createdAt: row.createdAt,
    host: row.hostId,
  }
}

/** The newest registry event sequence (0 when none). */
export async function latestSeq(q: Queryable): Promise<number> {
  const [row] = await q.select({ seq: registryEvents.seq }).from(registryEvents).orderBy(desc(registryEvents.seq)).limit(1)
  return row?.seq ?? 0
}

export interface StoredIncrement {
  seq: number
  increment: RegistryIncrement
}

export async function eventsAfter(q: Queryable, after: number, limit: number): Promise<StoredIncrement[]> {
  const rows = await q.select().from(registryEvents).where(gt(registryEvents.seq, after)).orderBy(asc(registryEvents.seq)).limit(limit)
  return rows.map((r) => ({ seq: r.seq, increment: { kind: r.kind, payload: r.payload } as RegistryIncrement }))
}

// ── Writes ──────────────────────────────────────────────────────────────────

/** Appends an increment and prunes what falls out of the kept window (REGISTRY_EVENTS_KEPT). */
export async function appendEvent(tx: Tx, increment: RegistryIncrement): Promise<void> {
  const [{ seq }] = await tx
    .insert(registryEvents)
    .values({ kind: increment.kind, payload: increment.payload, createdAt: Date.now() })
    .returning({ seq: registryEvents.seq })
  await tx.delete(registryEvents).where(lte(registryEvents.seq, seq! - REGISTRY_EVENTS_KEPT))
}

/** The oldest registry event still kept (0 when none). */
export async function oldestSeq(q: Queryable): Promise<number> {
  const [row] = await q.select({ seq: registryEvents.seq }).from(registryEvents).orderBy(asc(registryEvents.seq)).limit(1)
  return row?.seq ?? 0
}

/** Renumbers positions 0..n-1 in the given order (lists are short; renumbering keeps them exact). */
export async function setWorkspaceOrder(tx: Tx, ids: readonly string[]): Promise<void> {
  for (const [index, id] of ids.entries()) {
    await tx.update(workspaces).set({ position: index }).where(eq(workspaces.id, id))
  }
}

export async function listedSessionIds(tx: Tx, workspaceId: string): Promise<string[]> {
  const rows = await tx
    .select({ id: workspaceSessions.sessionId })
    .from(workspaceSessions)
    .where(eq(workspaceSessions.workspaceId, workspaceId))
    .orderBy(asc(workspaceSessions.position), asc(workspaceSessions.sessionId))
  return rows.map((r) => r.id)
}

export async function setSessionOrder(tx: Tx, workspaceId: string, ids: readonly string[]): Promise<void> {
  for (const [index, id] of ids.entries()) {
    await tx
      .update(workspaceSessions)
      .set({ position: index })
      .where(and(eq(workspaceSessions.workspaceId, workspaceId), eq(workspaceSessions.sessionId, id)))
  }
}

/** The smallest position minus one: prepending never renumbers. */
export async function frontPosition(tx: Tx, table: 'workspaces' | { workspaceId: string }): Promise<number> {
  const [row] =
    table === 'workspaces'
      ? await tx.select({ min: sql<number | null>`min(${workspaces.position})` }).from(workspaces)
      : await tx
          .select({ min: sql<number | null>`min(${workspaceSessions.position})` })
          .from(workspaceSessions)
          .where(eq(workspaceSessions.workspaceId, table.workspaceId))
  return row?.min === null || row?.min === undefined ? 0 : Number(row.min) - 1
}

export async function touchWorkspace(tx: Tx, id: string): Promise<void> {
  await tx.update(workspaces).set({ updatedAt: Date.now() }).where(eq(workspaces.id, id))
}

/** Pure: `ids` with `id` moved before `beforeId`, or to the end when `beforeId` is undefined. */
export function moveBefore(ids: readonly string[], id: string, beforeId: string | undefined): string[] | undefined {
  if (!ids.includes(id)) return undefined
  if (beforeId === id) return [...ids]
  if (beforeId !== undefined && !ids.includes(beforeId)) return undefined
  const rest = ids.filter((x) => x !== id)
  const at = beforeId === undefined ? rest.length : rest.indexOf(beforeId)
  rest.splice(at, 0, id)
  return rest
}

// ── The mutation envelope ───────────────────────────────────────────────────

const queues = new WeakMap<Database, Promise<unknown>>()
const listeners = new WeakMap<Database, Set<() => void>>()
const BUSY_RETRIES = 20

function isBusy(error: unknown): boolean {
  const text = `${(error as { code?: string })?.code ?? ''} ${(error as Error)?.message ?? ''}`
  return /SQLITE_BUSY|database is locked/i.test(text)
}

/**
 * Runs `work` as one serialized, durable registry mutation. Returns after the commit; then wakes
 * this process's watchers (other instances find the events by polling).
 */
export async function mutate<T>(db: Database, work: (tx: Tx) => Promise<T>): Promise<T> {
  const previous = queues.get(db) ?? Promise.resolve()
  const run = previous
    .catch(() => {})
    .then(async () => {
      for (let attempt = 0; ; attempt++) {
        try {
          return await db.transaction(work)
        } catch (error) {
          if (!isBusy(error) || attempt >= BUSY_RETRIES) throw error
          await new Promise((r) => setTimeout(r, 10 + Math.random() * 20 * (attempt + 1)))
        }
      }
    })
  queues.set(db, run)
  const result = await run
  for (const wake of listeners.get(db) ?? []) wake()
  return result
}

/** Subscribes to "a mutation committed in this process"; returns the unsubscribe function. */
export function onMutation(db: Database, wake: () => void): () => void {
  let set = listeners.get(db)
  if (!set) listeners.set(db, (set = new Set()))
  set.add(wake)
  return () => set.delete(wake)
}
