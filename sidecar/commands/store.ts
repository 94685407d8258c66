/**
 * Command records in libSQL (`terminal_commands`). The sidecar is their only writer; the API reads
 * them (api/commands/store.ts), so they answer after the terminal was retired and without the
 * sidecar.
 */
import { and, eq, inArray, isNull, lt, lte, sql } from 'drizzle-orm'
import { terminalCommands, terminals } from '../../schema/tables.ts'
import type { Database } from '../../storage/client.ts'

export type CommandRow = typeof terminalCommands.$inferSelect
export type CommandEnd = Pick<
  CommandRow,
  'endSequence' | 'endLength' | 'exitCode' | 'endedAt' | 'outputBytes' | 'outputText' | 'outputOmitted'
>

export class CommandStore {
  readonly #db: Database

  constructor(db: Database) {
    this.#db = db
  }

  async start(row: CommandRow): Promise<void> {
    await this.#db.insert(terminalCommands).values(row).onConflictDoNothing()
  }

  async end(sessionId: string, terminalId: string, n: number, end: CommandEnd): Promise<void> {
    await this.#db
      .update(terminalCommands)
      .set(end)
      .where(this.#one(sessionId, terminalId, n))
  }

  /**
   * Ends, at `now` and with no exit code, the records left running by terminals of earlier
   * generations (a sidecar that crashed never saw their end). Their output cursors stay open.
   */
  async endAbandoned(generation: number, now = Date.now()): Promise<void> {
    const earlier = this.#db
      .select({ sessionId: terminals.sessionId, id: terminals.id })
      .from(terminals)
      .where(lt(terminals.hostGeneration, generation))
    await this.#db
      .update(terminalCommands)
      .set({ endedAt: now })
      .where(and(isNull(terminalCommands.endedAt), inArray(sql`(${terminalCommands.sessionId}, ${terminalCommands.terminalId})`, earlier)))
  }

  /** Removes the records up to and including `n` (retention). */
  async prune(sessionId: string, terminalId: string, n: number): Promise<void> {
    await this.#db
      .delete(terminalCommands)
      .where(and(eq(terminalCommands.sessionId, sessionId), eq(terminalCommands.terminalId, terminalId), lte(terminalCommands.n, n)))
  }

  #one(sessionId: string, terminalId: string, n: number) {
    return and(eq(terminalCommands.sessionId, sessionId), eq(terminalCommands.terminalId, terminalId), eq(terminalCommands.n, n))
  }
}
