import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { readMigrationFiles } from 'drizzle-orm/migrator'
import { afterAll, describe, expect, it } from 'vitest'
import { startSqld, type RunningSqld } from '../support/sqld.ts'
import { migrations as bundled } from '../../migrations/bundled.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'

const EXPECTED_TABLES = [
  'archived_sessions',
  'attachments',
  'data_migrations',
  'display_chunks',
  'display_history',
  'display_revisions',
  'health_probes',
  'host_generations',
  'hosts',
  'legacy_terminal_records',
  'registry_events',
  'resource_parts',
  'resource_uploads',
  'sessions',
  'stream_tickets',
  'terminal_commands',
  'terminals',
  'token_grants',
  'token_observe_env',
  'token_sessions',
  'tokens',
  'tool_results',
  'workflow_events',
  'workflow_runs',
  'workspace_sessions',
  'workspaces',
]

async function tableNames(storage: Storage): Promise<string[]> {
  const rs = await storage.client.execute(
    "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name NOT LIKE '\\_\\_%' ESCAPE '\\' ORDER BY name",
  )
  return rs.rows.map((r) => String(r.name))
}

function describeDatabase(name: string, url: () => Promise<string>) {
  describe(`migrations on ${name}`, () => {
    it('apply to a fresh database, then a second run is a no-op', async () => {
      const storage = await openStorage({ url: await url() })
      try {
        const first = await migrate(storage.client)
        expect(first).toEqual({ applied: bundled.length, total: bundled.length })
        expect(await tableNames(storage)).toEqual(EXPECTED_TABLES)
        const second = await migrate(storage.client)
        expect(second).toEqual({ applied: 0, total: bundled.length })
        const ledger = await storage.client.execute('SELECT hash FROM __drizzle_migrations')
        expect(ledger.rows.map((r) => r.hash)).toEqual(bundled.map((m) => m.hash))
      } finally {
        storage.close()
      }
    })

    it('two starters migrating at once both succeed', async () => {
      const shared = await url()
      const a = await openStorage({ url: shared })
      const b = await openStorage({ url: shared })
      try {
        await Promise.all([migrate(a.client), migrate(b.client)])
        const ledger = await a.client.execute('SELECT count(*) AS n FROM __drizzle_migrations')
        expect(Number(ledger.rows[0].n)).toBe(bundled.length)
      } finally {
        a.close()
        b.close()
      }
    })
  })
}

describeDatabase('an embedded file', async () => `file:${join(mkdtempSync(join(tmpdir(), 'termkeep-mig-')), 'db.sqlite')}`)

// sqld serves one database per server, so every test here gets its own fresh server.
const servers: RunningSqld[] = []
afterAll(() => Promise.all(servers.map((s) => s.stop())))
describeDatabase('a real sqld server', async () => {
  const sqld = await startSqld()
  servers.push(sqld)
  return sqld.url
})

describe('bundled migrations', () => {
  it('match the drizzle-kit SQL in migrations/ (run npm run db:generate after changing storage/tables.ts)', () => {
    const fromDisk = readMigrationFiles({ migrationsFolder: new URL('../../migrations', import.meta.url).pathname })
    expect(bundled).toEqual(fromDisk.map((m) => ({ hash: m.hash, folderMillis: m.folderMillis, sql: m.sql })))
  })
})
