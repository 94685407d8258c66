/**
 * A scratch libSQL file for display tests: migrated, with session `s`, removed afterwards. Call
 * at the top of a test file (it registers its own beforeAll / afterAll).
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll } from 'vitest'
import { sessions } from '../../../storage/tables.ts'
import { openStorage, type Storage } from '../../../storage/client.ts'
import { migrate } from '../../../storage/migrate.ts'

export function scratchDatabase(prefix: string): { readonly storage: Storage } {
  let dir = ''
  const scratch = { storage: undefined as unknown as Storage }
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), prefix))
    scratch.storage = await openStorage({ url: `file:${join(dir, 'termkeep.db')}` })
    await migrate(scratch.storage.client)
    await scratch.storage.db.insert(sessions).values({ id: 's', cwd: dir })
  })
  afterAll(() => {
    scratch.storage?.close()
    rmSync(dir, { recursive: true, force: true })
  })
  return scratch
}
