/**
 * Terminal rows in libSQL. The sidecar is the only writer of `terminals`; the API reads them to
 * list terminals without the sidecar. A state write only ever moves forward
 * (starting → running → exited → closed → retired): the UPDATE itself refuses to go back.
 */
import { and, asc, eq, inArray, ne } from 'drizzle-orm'
import { TermkeepError } from '../schema/errors.ts'
import { TERMINAL_STATES, type TerminalInfo, type TerminalState, type TerminalWorkflow } from '../schema/wire/terminals.ts'
import { sessions, terminals } from './tables.ts'
import { earlierOnSameHost } from './generations.ts'
import type { Database } from './client.ts'

export type TerminalRow = typeof terminals.$inferSelect

export type TerminalPatch = Partial<
  Pick<
    TerminalRow,
    | 'title'
    | 'cols'
    | 'rows'
    | 'state'
    | 'exitCode'
    | 'exitSignal'
    | 'error'
    | 'exitedAt'
    | 'closedAt'
    | 'foregroundCommand'
    | 'leaderPid'
    | 'leaderStartTicks'
    | 'bootId'
    | 'name'
    | 'commandMarks'
  >
>

/** The states a row may be in for `next` to be written: every earlier one. */
export function statesBefore(next: TerminalState): TerminalState[] {
  return TERMINAL_STATES.slice(0, TERMINAL_STATES.indexOf(next))
}

export class TerminalStore {
  readonly #db: Database

  constructor(db: Database) {
    this.#db = db
  }

  async sessionCwd(sessionId: string): Promise<string | undefined> {
    const [row] = await this.#db.select({ cwd: sessions.cwd }).from(sessions).where(eq(sessions.id, sessionId)).limit(1)
    return row?.cwd
  }

  async get(sessionId: string, id: string): Promise<TerminalRow | undefined> {
    const [row] = await this.#db
      .select()
      .from(terminals)
      .where(and(eq(terminals.sessionId, sessionId), eq(terminals.id, id)))
      .limit(1)
    return row
  }

  list(sessionId: string): Promise<TerminalRow[]> {
    return this.#db.select().from(terminals).where(eq(terminals.sessionId, sessionId)).orderBy(asc(terminals.createdAt), asc(terminals.id))
  }

  async insert(row: typeof terminals.$inferInsert): Promise<void> {
    await this.#db.insert(terminals).values(row)
  }

  /** Applies a patch; a state change only lands if it moves forward. Returns whether it landed. */
  async update(sessionId: string, id: string, patch: TerminalPatch): Promise<boolean> {
    const key = and(eq(terminals.sessionId, sessionId), eq(terminals.id, id))
    const where = patch.state ? and(key, inArray(terminals.state, statesBefore(patch.state))) : key
    const result = await this.#db
      .update(terminals)
      .set({ ...patch, updatedAt: Date.now() })
      .where(where)
    return result.rowsAffected > 0
  }

  /** At start: every terminal of this host not retired yet (an earlier sidecar's: adopted when
   * the keeper still holds it, else retired); another host's are its own sidecar's to judge. */
  unretired(generation: number): Promise<TerminalRow[]> {
    return this.#db
      .select()
      .from(terminals)
      .where(and(ne(terminals.state, 'retired'), earlierOnSameHost(terminals.hostGeneration, generation)))
  }

  /** A terminal this sidecar adopted from the keeper: it belongs to this generation now. */
  async adopt(sessionId: string, id: string, generation: number): Promise<void> {
    await this.#db
      .update(terminals)
      .set({ hostGeneration: generation, updatedAt: Date.now() })
      .where(and(eq(terminals.sessionId, sessionId), eq(terminals.id, id)))
  }

  /** At start: terminals whose program is gone (their keeper ended) are retired. */
  async retire(rows: readonly { sessionId: string; id: string }[]): Promise<void> {
    for (const row of rows) await this.update(row.sessionId, row.id, { state: 'retired' })
  }
}

/**
 * Pure: a stored `terminals` row as the wire's TerminalInfo. The table does not hold the live
 * controller, so `controllerId` is null unless the live terminal supplies it.
 */
export function terminalInfoOf(row: TerminalRow, controllerId: string | null = null): TerminalInfo {
  return {
    sessionId: row.sessionId,
    id: row.id,
    title: row.title,
    shell: { path: row.shellPath, args: row.shellArgs, name: row.shellPath.split('/').at(-1) ?? row.shellPath },
    cwd: row.cwd,
    cols: row.cols,
    rows: row.rows,
    state: row.state,
    exitCode: row.exitCode,
    exitSignal: row.exitSignal,
    error: row.error,
    hostGeneration: row.hostGeneration,
    controllerId,
    createdAt: row.createdAt,
    updatedAt: row.updatedAt,
    closedAt: row.closedAt,
    foregroundCommand: row.foregroundCommand,
    ...workflowOf(row),
    name: row.name,
    commandMarks: row.commandMarks,
  }
}

/** Pure: the `workflow` field of a sub-agent terminal's info (nothing for other terminals). */
export function workflowOf(row: { workflowRun: string | null; workflowSeq: number | null }): { workflow?: TerminalWorkflow } {
  return row.workflowRun !== null && row.workflowSeq !== null ? { workflow: { run: row.workflowRun, seq: row.workflowSeq } } : {}
}

/** The session's terminals as stored, live and retired: the API answers from them while the sidecar is down. `controllerId` is
 * live-only state the table does not hold; it is null here (follow's `state` events carry it). */
export async function storedTerminals(db: Database, sessionId: string): Promise<TerminalInfo[]> {
  return (await new TerminalStore(db).list(sessionId)).map((row) => terminalInfoOf(row))
}

/** One stored terminal, or `terminal/not-found`. */
export async function storedTerminal(db: Database, sessionId: string, id: string): Promise<TerminalInfo> {
  const row = await new TerminalStore(db).get(sessionId, id)
  if (!row) throw new TermkeepError('terminal/not-found', `no terminal ${id} in session ${sessionId}`)
  return terminalInfoOf(row)
}
