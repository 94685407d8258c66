/**
 * Test helpers for incremental revisions: read a stored revision back the way the API streams it
 * (storage/displays/revisions.ts), and check the store's invariant — every revision's history rows are all
 * present, no chunk is left that no revision overlaps.
 */
import { and, asc, eq } from 'drizzle-orm'
import { beginOf, chunksOf, type Header } from '../../../storage/displays/revisions.ts'
import { displayHistory, displayRevisions } from '../../../storage/tables.ts'
import type { DisplayBegin } from '../../../schema/wire/display.ts'
import type { Database } from '../../../storage/client.ts'

export async function headers(db: Database, sessionId: string, terminalId: string): Promise<Header[]> {
  return db
    .select()
    .from(displayRevisions)
    .where(and(eq(displayRevisions.sessionId, sessionId), eq(displayRevisions.terminalId, terminalId)))
    .orderBy(asc(displayRevisions.revision))
}

/** begin (without the fields a stored revision adds: number, origin, time) and every body. */
export async function streamed(db: Database, header: Header): Promise<{ begin: DisplayBegin; bodies: string[] }> {
  const bodies: string[] = []
  for await (const body of chunksOf(db, header)) bodies.push(body)
  return { begin: beginOf(header), bodies }
}

/** Problems with the store's invariant for one terminal (empty when it holds). */
export async function storeProblems(db: Database, sessionId: string, terminalId: string): Promise<string[]> {
  const problems: string[] = []
  const chunks = await db
    .select({ epoch: displayHistory.epoch, first: displayHistory.firstRow, count: displayHistory.rowCount })
    .from(displayHistory)
    .where(and(eq(displayHistory.sessionId, sessionId), eq(displayHistory.terminalId, terminalId)))
    .orderBy(asc(displayHistory.epoch), asc(displayHistory.firstRow))
  const revisions = (await headers(db, sessionId, terminalId)).filter((h) => h.format === 2)
  for (const r of revisions) {
    const first = r.historyEnd! - r.historyRows
    let at = first
    for (const c of chunks) {
      if (c.epoch !== r.historyEpoch || c.first + c.count <= at || c.first >= r.historyEnd!) continue
      if (c.first > at) break
      at = c.first + c.count
    }
    if (at < r.historyEnd!) problems.push(`revision ${r.revision}: history rows ${at}–${r.historyEnd! - 1} missing`)
  }
  for (const c of chunks) {
    const used = revisions.some((r) => r.historyEpoch === c.epoch && r.historyFirst! < c.first + c.count && r.historyEnd! > c.first)
    if (!used) problems.push(`chunk ${c.epoch}/${c.first} (${c.count} rows) is referenced by no revision`)
  }
  for (let i = 1; i < chunks.length; i++) {
    const a = chunks[i - 1]
    const b = chunks[i]
    if (a.epoch === b.epoch && a.first + a.count > b.first) problems.push(`chunks ${a.epoch}/${a.first} and ${b.first} overlap`)
  }
  return problems
}
