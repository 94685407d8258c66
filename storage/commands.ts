/**
 * Command records in libSQL (`terminal_commands`, docs/commands.md). The sidecar is their only
 * writer (CommandStore); the API reads them straight from here, so they answer after the terminal
 * was retired, across sidecar restarts and with the sidecar down.
 */
import { and, asc, desc, eq, gt, inArray, isNull, lt, lte, sql } from 'drizzle-orm'
import { TermkeepError } from '../schema/errors.ts'
import type { CommandOutput, CommandPage, CommandRecord, CommandsQuery } from '../schema/wire/commands.ts'
import type { Database } from './client.ts'
import { terminalCommands, terminals } from './tables.ts'
import { earlierOnSameHost } from './generations.ts'
import { storedTerminal } from './terminals.ts'

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
   * generations of this host (a sidecar that crashed never saw their end; another host's are
   * still running). Their output cursors stay open.
   */
  async endAbandoned(generation: number, now = Date.now()): Promise<void> {
    const earlier = this.#db
      .select({ sessionId: terminals.sessionId, id: terminals.id })
      .from(terminals)
      .where(earlierOnSameHost(terminals.hostGeneration, generation))
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

// ── Reads (the API) ─────────────────────────────────────────────────────────

type Row = typeof terminalCommands.$inferSelect

/** Pure: a stored row as the wire's record. */
export function commandRecordOf(row: Row): CommandRecord {
  return {
    n: row.n,
    command: row.command,
    cwd: row.cwd,
    state: row.endedAt === null ? 'running' : 'ended',
    start: row.startSequence,
    startSkip: row.startSkip,
    end: row.endSequence,
    endLength: row.endLength,
    exitCode: row.exitCode,
    startedAt: row.startedAt,
    endedAt: row.endedAt,
    marks: row.marks,
    outputBytes: row.outputBytes,
  }
}

const ofTerminal = (sid: string, tid: string) => and(eq(terminalCommands.sessionId, sid), eq(terminalCommands.terminalId, tid))

/** A page of the terminal's commands, oldest first (404 for a terminal that does not exist). */
export async function listCommands(db: Database, sid: string, tid: string, query: CommandsQuery): Promise<CommandPage> {
  await storedTerminal(db, sid, tid)
  const where = [ofTerminal(sid, tid)]
  if (query.after !== undefined) where.push(gt(terminalCommands.n, query.after))
  if (query.before !== undefined) where.push(lt(terminalCommands.n, query.before))
  const order = query.after !== undefined ? asc(terminalCommands.n) : desc(terminalCommands.n)
  const rows = await db
    .select()
    .from(terminalCommands)
    .where(and(...where))
    .orderBy(order)
    .limit(query.limit)
  if (query.after === undefined) rows.reverse()
  const [newest] = await db
    .select({ n: terminalCommands.n })
    .from(terminalCommands)
    .where(ofTerminal(sid, tid))
    .orderBy(desc(terminalCommands.n))
    .limit(1)
  return { commands: rows.map(commandRecordOf), newest: newest?.n ?? 0 }
}

async function commandRow(db: Database, sid: string, tid: string, n: number): Promise<Row> {
  const [row] = await db
    .select()
    .from(terminalCommands)
    .where(and(ofTerminal(sid, tid), eq(terminalCommands.n, n)))
    .limit(1)
  if (row) return row
  await storedTerminal(db, sid, tid)
  throw new TermkeepError('command/not-found', `no command ${n} in terminal ${tid} (never run, or older than the records kept)`, { n })
}

export async function getCommand(db: Database, sid: string, tid: string, n: number): Promise<CommandRecord> {
  return commandRecordOf(await commandRow(db, sid, tid, n))
}

/** The stored text of an ended command; undefined while it runs (the sidecar has it then). */
export async function storedOutput(db: Database, sid: string, tid: string, n: number): Promise<CommandOutput | undefined> {
  const row = await commandRow(db, sid, tid, n)
  if (row.endedAt === null || row.outputText === null) return undefined
  return { n, state: 'ended', text: row.outputText, omittedBytes: row.outputOmitted ?? 0, outputBytes: row.outputBytes ?? 0 }
}
