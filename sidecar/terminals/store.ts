/**
 * Terminal rows in libSQL. The sidecar is the only writer of `terminals`; the API reads them to
 * list terminals without the sidecar. A state write only ever moves forward
 * (starting → running → exited → closed → retired): the UPDATE itself refuses to go back.
 */
import { and, asc, eq, inArray, ne } from 'drizzle-orm'
import { sessions, terminals, TERMINAL_STATES, type TerminalState } from '../../schema/tables.ts'
import type { Database } from '../../storage/client.ts'

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

  /** At start: every terminal not retired yet (an earlier sidecar's: adopted when the keeper
   * still holds it, else retired). */
  unretired(): Promise<TerminalRow[]> {
    return this.#db.select().from(terminals).where(ne(terminals.state, 'retired'))
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
