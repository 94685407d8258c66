/**
 * Applies the bundled drizzle-kit migrations with drizzle's exact bookkeeping (the same
 * `__drizzle_migrations` table, hashes and folderMillis as `drizzle-orm/libsql/migrator`), but
 * without reading files, so it runs on Node, Deno and Workers alike. Written here because
 * drizzle's own migrator needs `node:fs`.
 *
 * All pending migrations go in one atomic batch (one HTTP request against a remote server).
 * Two processes starting together may both try; the loser sees the schema already applied and
 * re-checks the ledger instead of failing.
 */
import type { Client } from '@libsql/client'
import { migrations as bundled } from '../migrations/bundled.ts'

export interface BundledMigration {
  hash: string
  folderMillis: number
  sql: string[]
}

export interface MigrationResult {
  applied: number
  total: number
}

const LEDGER = '__drizzle_migrations'

async function lastAppliedMillis(client: Client): Promise<number> {
  await client.execute(`CREATE TABLE IF NOT EXISTS "${LEDGER}" (id SERIAL PRIMARY KEY, hash text NOT NULL, created_at numeric)`)
  const result = await client.execute(`SELECT created_at FROM "${LEDGER}" ORDER BY created_at DESC LIMIT 1`)
  const row = result.rows[0]
  return row ? Number(row[0]) : -1
}

export async function migrate(client: Client, migrations: BundledMigration[] = bundled): Promise<MigrationResult> {
  for (let attempt = 0; ; attempt++) {
    const last = await lastAppliedMillis(client)
    const pending = migrations.filter((m) => m.folderMillis > last)
    if (pending.length === 0) return { applied: 0, total: migrations.length }
    const statements = pending.flatMap((m) => [
      ...m.sql.map((s) => s.trim()).filter((s) => s.length > 0),
      { sql: `INSERT INTO "${LEDGER}" ("hash", "created_at") VALUES (?, ?)`, args: [m.hash, m.folderMillis] },
    ])
    try {
      await client.migrate(statements)
      return { applied: pending.length, total: migrations.length }
    } catch (error) {
      // A concurrent starter may have applied the same batch first; look again once.
      if (attempt > 0) throw error
    }
  }
}
