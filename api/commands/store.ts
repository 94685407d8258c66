/**
 * Command records straight from libSQL (the sidecar writes `terminal_commands`,
 * sidecar/commands/store.ts), so they answer after the terminal was retired, across sidecar
 * restarts and with the sidecar down.
 */
import { and, asc, desc, eq, gt, lt, max } from 'drizzle-orm'
import { TermkeepError } from '../../schema/errors.ts'
import { terminalCommands } from '../../schema/tables.ts'
import type { CommandOutput, CommandPage, CommandRecord, CommandsQuery } from '../../schema/wire/commands.ts'
import type { Database } from '../../storage/client.ts'
import { terminalInfo } from '../terminals/store.ts'

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
  await terminalInfo(db, sid, tid)
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
    .select({ n: max(terminalCommands.n) })
    .from(terminalCommands)
    .where(ofTerminal(sid, tid))
  return { commands: rows.map(commandRecordOf), newest: newest?.n ?? 0 }
}

async function commandRow(db: Database, sid: string, tid: string, n: number): Promise<Row> {
  const [row] = await db
    .select()
    .from(terminalCommands)
    .where(and(ofTerminal(sid, tid), eq(terminalCommands.n, n)))
    .limit(1)
  if (row) return row
  await terminalInfo(db, sid, tid)
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
