/**
 * The smoke suite on Deno: a real `deno serve` of api/runtime/deno.ts (the pinned npm deno
 * binary) against sqld and the sidecar, plus `deno check` of the entry and the embedded `file:`
 * database through the native client.
 */
import { existsSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStorage } from '../../storage/client.ts'
import { createToken } from '../../storage/tokens.ts'
import { freePort } from '../support/ports.ts'
import { describeSmoke } from './routes.ts'
import { denoBinary, denoCheck, scratchDir, startDenoTarget, type RunningTarget } from './targets.ts'

const deno = denoBinary()
if (!deno) {
  describe.skip('Deno API (skipped: no deno binary for this platform in node_modules; npm ci installs it on linux/darwin x64 and arm64)', () => {
    it('needs deno', () => {})
  })
} else {
  describe('Deno entry', () => {
    it('passes deno check (the whole API graph type-checks under Deno)', () => {
      const { status, output } = denoCheck()
      expect(status, output).toBe(0)
    }, 180_000)
  })

  describeSmoke('Deno API on a remote libSQL server', 'deno', (backend) =>
    startDenoTarget({
      TERMKEEP_DATA_DIR: join(backend.workdir, 'deno-data'), // removed with the backend
      DATABASE_URL: backend.databaseUrl,
      SIDECAR_URL: backend.sidecar.url,
      SIDECAR_SECRET: backend.sidecar.secret,
      AUTO_MIGRATE: '1',
    }),
  )

  describe('Deno API on an embedded file: database', () => {
    const root = scratchDir('termkeep-deno-file-')
    const dataDir = join(root, 'nested', 'data')
    let target: RunningTarget | undefined

    beforeAll(async () => {
      // No DATABASE_URL and no AUTO_MIGRATE: the default file:<data dir>/termkeep.db, created and
      // migrated by the entry.
      target = await startDenoTarget({
        TERMKEEP_DATA_DIR: dataDir,
        SIDECAR_URL: `http://127.0.0.1:${await freePort()}`, // nothing listens: this test has no sidecar
        SIDECAR_SECRET: 'no-sidecar-in-this-test',
      })
    }, 120_000)
    afterAll(async () => {
      await target?.stop()
      rmSync(root, { recursive: true, force: true })
    })

    it('creates and migrates the database file and serves authenticated routes from it', async () => {
      expect(existsSync(join(dataDir, 'termkeep.db'))).toBe(true)
      const health = await (await fetch(`${target!.url}/v1/health`)).json()
      expect(health).toMatchObject({ runtime: 'deno', database: { reachable: true }, sidecar: { reachable: false } })
      // The same file, opened from Node at the same time, sees the tables Deno's entry migrated.
      const storage = await openStorage({ url: `file:${join(dataDir, 'termkeep.db')}` })
      try {
        const { secret } = await createToken(storage.db, { name: 'deno-file', grants: ['workspaces:read'], sessions: 'all' })
        expect(secret).toMatch(/^tk_/)
      } finally {
        storage.close()
      }
    })
  })
}
