/**
 * The legacy text-only terminal records and the data-migration ledger that says which of them
 * became display revisions (the migration itself: sidecar/display/legacy.ts).
 */
import { eq, like } from 'drizzle-orm'
import type { Database } from '../client.ts'
import { dataMigrations, legacyTerminalRecords } from '../tables.ts'

export type LegacyRecord = typeof legacyTerminalRecords.$inferSelect

/** Every legacy record, in a stable order. */
export function legacyRecords(db: Database): Promise<LegacyRecord[]> {
  return db.select().from(legacyTerminalRecords).orderBy(legacyTerminalRecords.sessionId, legacyTerminalRecords.terminalId)
}

/** The ledger entries whose names start with `prefix`. */
export async function ledgerNames(db: Database, prefix: string): Promise<Set<string>> {
  const rows = await db
    .select({ name: dataMigrations.name })
    .from(dataMigrations)
    .where(like(dataMigrations.name, `${prefix}%`))
  return new Set(rows.map((r) => r.name))
}

export async function hasLedgerEntry(db: Database, name: string): Promise<boolean> {
  return (await db.select().from(dataMigrations).where(eq(dataMigrations.name, name))).length > 0
}

/** Records a ledger entry unless one of that name exists. */
export async function recordLedgerEntry(db: Database, name: string, detail: string): Promise<void> {
  await db.insert(dataMigrations).values({ name, detail }).onConflictDoNothing()
}
