/**
 * Opens the libSQL database. One code path for every runtime: `@libsql/client` picks its native
 * (file:) or web (http/ws) implementation by export condition, and drizzle wraps it.
 */
import { createClient, type Client } from '@libsql/client'
import { drizzle, type LibSQLDatabase } from 'drizzle-orm/libsql'
import { DB_BUSY_TIMEOUT_MS } from './tuning.ts'
import * as tables from './tables.ts'

export type Database = LibSQLDatabase<typeof tables>

export interface Storage {
  client: Client
  db: Database
  /** Health's write probe's connection (storage/health.ts): for an embedded file a second one
   * that never waits for a lock (busy timeout 0), since a write waiting on the lock blocks the
   * process's main thread for up to the busy timeout; `client` for a remote database. */
  probe: Client
  /** `probe` for queries: writes that must never hold the main thread on a lock
   * another process holds (the sidecar's generation heartbeat). */
  probeDb: Database
  close(): void
  /**
   * The process's last use: an embedded file's write-ahead log is checkpointed and emptied
   * (`wal_checkpoint(TRUNCATE)`), then the connections close. SQLite unlinks the log at the last
   * close without emptying it, so a hard link someone made to it would keep database pages
   * readable outside the data directory, where nothing knows them as termkeep's. Best effort: a
   * checkpoint another process blocks leaves the log as it is (it stays in the data directory).
   */
  shutdown(): Promise<void>
}

export interface StorageOptions {
  url: string
  authToken?: string
  /** An embedded file's busy timeout (default DB_BUSY_TIMEOUT_MS). */
  busyTimeoutMs?: number
}

export async function openStorage({ url, authToken, busyTimeoutMs = DB_BUSY_TIMEOUT_MS }: StorageOptions): Promise<Storage> {
  const client = createClient({ url, authToken, timeout: busyTimeoutMs })
  if (url.startsWith('file:')) {
    // WAL lets the API read while the sidecar writes a revision; the setting persists in the file.
    await client.execute('PRAGMA journal_mode = WAL')
  }
  const db = drizzle(client, { schema: tables })
  const probe = url.startsWith('file:') ? createClient({ url, timeout: 0 }) : client
  const probeDb = probe === client ? db : drizzle(probe, { schema: tables })
  const close = () => {
    client.close()
    if (probe !== client) probe.close()
  }
  return {
    client,
    db,
    probe,
    probeDb,
    close,
    async shutdown() {
      if (url.startsWith('file:')) await client.execute('PRAGMA wal_checkpoint(TRUNCATE)').catch(() => undefined)
      close()
    },
  }
}
