/**
 * Terminal list and info straight from libSQL (the sidecar writes the `terminals` table), so they
 * answer for retired terminals and while the sidecar is down. `controllerId` is live-only state
 * the table does not hold; it is null here (follow's `state` events carry it).
 */
import { and, asc, eq } from 'drizzle-orm'
import { TermkeepError } from '../../schema/errors.ts'
import { terminals } from '../../storage/tables.ts'
import { terminalInfoOf, type TerminalInfo } from '../../schema/wire/terminals.ts'
import type { Database } from '../../storage/client.ts'

export async function listTerminals(db: Database, sessionId: string): Promise<TerminalInfo[]> {
  const rows = await db
    .select()
    .from(terminals)
    .where(eq(terminals.sessionId, sessionId))
    .orderBy(asc(terminals.createdAt), asc(terminals.id))
  return rows.map((row) => terminalInfoOf(row))
}

export async function terminalInfo(db: Database, sessionId: string, id: string): Promise<TerminalInfo> {
  const [row] = await db
    .select()
    .from(terminals)
    .where(and(eq(terminals.sessionId, sessionId), eq(terminals.id, id)))
    .limit(1)
  if (!row) throw new TermkeepError('terminal/not-found', `no terminal ${id} in session ${sessionId}`)
  return terminalInfoOf(row)
}
