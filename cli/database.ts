/**
 * The server's database, opened by a command that works on it directly (`token create`, `hosts
 * secret`, `hosts rotate`). A file database must exist already: one opened here from another
 * directory would be a new, empty database no server reads.
 */
import { existsSync } from 'node:fs'
import type { Config } from '../schema/config.ts'
import { openStorage, type Storage } from '../storage/client.ts'
import { migrate } from '../storage/migrate.ts'
import { CommandError } from './usage.ts'

/** The database's file for a `file:` URL (undefined for a remote one). */
export function databaseFile(config: Config): string | undefined {
  return config.databaseUrl.startsWith('file:') ? config.databaseUrl.replace(/^file:(\/\/)?/, '').replace(/\?.*$/, '') : undefined
}

/** Opened and migrated; a missing file database is a CommandError ending in `hint`. */
export async function openServerDatabase(config: Config, hint: string): Promise<Storage> {
  const file = databaseFile(config)
  if (file !== undefined && !existsSync(file)) throw new CommandError(`termkeep: no termkeep database at ${file}; ${hint}`)
  const storage = await openStorage({ url: config.databaseUrl, authToken: config.databaseAuthToken })
  try {
    await migrate(storage.client)
  } catch (error) {
    storage.close()
    throw error
  }
  return storage
}
