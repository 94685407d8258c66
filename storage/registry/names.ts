/**
 * Names people type (docs/api.md#names): a session's name is unique across sessions, a terminal's
 * within its session, and neither may be the id of another of its kind in that scope. A target is
 * `session[:terminal]`, each part an id or a name; an id wins, and a part that is the id of one and
 * the name of another is `name/ambiguous` (a name can only come to collide so when an id is chosen
 * later: naming checks ids first). A terminal part left out is the session's newest live terminal.
 * Everything here sees only the sessions the token may touch.
 */
import { type AnyColumn, and, desc, eq, inArray, or, sql } from 'drizzle-orm'
import { TermkeepError } from '../../schema/errors.ts'
import { sessions, terminals } from '../tables.ts'
import type { FoundNames, ResolvedTarget } from '../../schema/wire/names.ts'
import type { RenameSession, Session } from '../../schema/wire/registry.ts'
import type { Authority } from '../authority.ts'
import type { Database } from '../client.ts'
import { mutate, type Queryable, sessionById } from './workspaces.ts'

/** Rows one find answers at most per kind. */
const FIND_LIMIT = 100

const taken = (name: string, what: string) => new TermkeepError('name/conflict', `the name ${name} is taken: it is ${what}`, { name })

/** SQLite's UNIQUE constraint failure, as libSQL reports it. */
export function isUniqueViolation(error: unknown): boolean {
  const text = `${(error as { message?: string })?.message ?? ''} ${String((error as { cause?: unknown })?.cause ?? '')}`
  return text.includes('UNIQUE constraint failed')
}

const inScope = (authority: Authority, id: string) => authority.sessions === 'all' || authority.sessions.has(id)
const notFound = (id: string) => new TermkeepError('session/not-found', `no session ${id}`)

/** Gives session `id` the name (null: none), in the caller's transaction. */
export async function claimSessionName(tx: Queryable, id: string, name: string | null): Promise<void> {
  if (name !== null && name !== id && (await sessionById(tx, name))) throw taken(name, 'the id of another session')
  try {
    await tx.update(sessions).set({ name }).where(eq(sessions.id, id))
  } catch (error) {
    if (isUniqueViolation(error)) throw taken(name!, 'the name of another session')
    throw error
  }
}

/** A new title, name, or both (`PATCH /v1/sessions/:sid`). */
export async function renameSession(db: Database, authority: Authority, id: string, change: RenameSession): Promise<Session> {
  if (!inScope(authority, id)) throw notFound(id)
  return mutate(db, async (tx) => {
    if (!(await sessionById(tx, id))) throw notFound(id)
    if (change.title !== undefined) await tx.update(sessions).set({ title: change.title }).where(eq(sessions.id, id))
    if (change.name !== undefined) await claimSessionName(tx, id, change.name)
    return (await sessionById(tx, id))!
  })
}

/** The one row of `rows` a target part names: by id first, then by name; ambiguous when they differ. */
function pick<T extends { id: string; name: string | null }>(rows: T[], part: string, kind: 'session' | 'terminal'): T {
  const byId = rows.find((row) => row.id === part)
  const byName = rows.find((row) => row.name === part)
  if (byId && byName && byId !== byName) {
    throw new TermkeepError(
      'name/ambiguous',
      `${part} is the id of one ${kind} and the name of another (${byName.id}); use the other's id`,
      { name: part, kind, ids: [byId.id, byName.id] },
    )
  }
  const found = byId ?? byName
  if (!found) throw new TermkeepError(`${kind}/not-found`, `no ${kind} is named ${part} (nor has it as its id)`, { name: part })
  return found
}

/** `session[:terminal]` to ids (see above). */
export async function resolveTarget(db: Database, authority: Authority, target: string): Promise<ResolvedTarget> {
  const colon = target.indexOf(':')
  const sessionPart = colon < 0 ? target : target.slice(0, colon)
  const terminalPart = colon < 0 ? undefined : target.slice(colon + 1)
  const sessionRows = (
    await db
      .select({ id: sessions.id, name: sessions.name })
      .from(sessions)
      .where(or(eq(sessions.id, sessionPart), eq(sessions.name, sessionPart)))
  ).filter((row) => inScope(authority, row.id))
  const session = pick(sessionRows, sessionPart, 'session')
  if (terminalPart === undefined || terminalPart === '') {
    const [newest] = await db
      .select({ id: terminals.id, name: terminals.name })
      .from(terminals)
      .where(and(eq(terminals.sessionId, session.id), inArray(terminals.state, ['starting', 'running', 'exited'])))
      .orderBy(desc(terminals.createdAt), desc(terminals.id))
      .limit(1)
    return { sessionId: session.id, sessionName: session.name, terminalId: newest?.id ?? null, terminalName: newest?.name ?? null }
  }
  const terminalRows = await db
    .select({ id: terminals.id, name: terminals.name })
    .from(terminals)
    .where(and(eq(terminals.sessionId, session.id), or(eq(terminals.id, terminalPart), eq(terminals.name, terminalPart))))
  const terminal = pick(terminalRows, terminalPart, 'terminal')
  return { sessionId: session.id, sessionName: session.name, terminalId: terminal.id, terminalName: terminal.name }
}

/** Sessions and terminals whose id, name or title holds `text` (any case), newest first. */
export async function findNames(db: Database, authority: Authority, text: string): Promise<FoundNames> {
  if (authority.sessions !== 'all' && authority.sessions.size === 0) return { sessions: [], terminals: [] }
  const pattern = `%${text.replace(/[\\%_]/g, (c) => `\\${c}`)}%`
  const matches = (...columns: AnyColumn[]) => or(...columns.map((column) => sql`${column} LIKE ${pattern} ESCAPE '\\'`))
  const scope = authority.sessions === 'all' ? undefined : [...authority.sessions]
  const foundSessions = await db
    .select({ id: sessions.id, name: sessions.name, title: sessions.title, cwd: sessions.cwd })
    .from(sessions)
    .where(and(matches(sessions.id, sessions.name, sessions.title), scope ? inArray(sessions.id, scope) : undefined))
    .orderBy(desc(sessions.createdAt))
    .limit(FIND_LIMIT)
  const foundTerminals = await db
    .select({ sessionId: terminals.sessionId, id: terminals.id, name: terminals.name, title: terminals.title, state: terminals.state })
    .from(terminals)
    .where(and(matches(terminals.id, terminals.name, terminals.title), scope ? inArray(terminals.sessionId, scope) : undefined))
    .orderBy(desc(terminals.createdAt))
    .limit(FIND_LIMIT)
  return { sessions: foundSessions, terminals: foundTerminals }
}
