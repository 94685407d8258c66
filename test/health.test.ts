/**
 * The Node API next to a real sidecar process: health reports the database (answers, can be
 * written, still the file opened) and the sidecar, and says `degraded` with each problem.
 */
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startNodeApi, type RunningApi } from '../api/runtime/node.ts'
import { openStorage, type Storage } from '../storage/client.ts'
import { migrate } from '../storage/migrate.ts'
import { freePort, waitFor } from './support/ports.ts'
import { startSidecar, type RunningSidecar } from './support/sidecar.ts'

describe('GET /v1/health', () => {
  let sidecar: RunningSidecar
  let storage: Storage
  let api: RunningApi

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-health-'))
    sidecar = await startSidecar({ dataDir })
    storage = await openStorage({ url: sidecar.databaseUrl })
    await migrate(storage.client)
    api = await startNodeApi({ storage, sidecarUrl: sidecar.url, sidecarSecret: sidecar.secret, host: '127.0.0.1', port: 0, databaseUrl: sidecar.databaseUrl })
  })
  afterAll(async () => {
    await api?.close()
    await sidecar?.stop()
    storage?.close()
  })

  it('reports the database and the sidecar reachable', async () => {
    const response = await fetch(`${api.url}/v1/health`)
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({
      status: 'ok',
      runtime: 'node',
      database: { reachable: true, writable: true },
      sidecar: { reachable: true, generation: sidecar.generation },
      problems: [],
    })
  })

  it('reports a sidecar with the wrong secret as unreachable', async () => {
    const wrong = await startNodeApi({ storage, sidecarUrl: sidecar.url, sidecarSecret: 'not-the-secret-at-all', host: '127.0.0.1', port: 0 })
    try {
      const body = await (await fetch(`${wrong.url}/v1/health`)).json()
      expect(body.status).toBe('degraded')
      expect(body.sidecar.reachable).toBe(false)
      expect(body.database.reachable).toBe(true)
    } finally {
      await wrong.close()
    }
  })

  it('reports a stopped sidecar unreachable, quickly, while the database stays reachable', async () => {
    const port = await freePort() // nothing listens here
    const orphan = await startNodeApi({ storage, sidecarUrl: `http://127.0.0.1:${port}`, sidecarSecret: sidecar.secret, host: '127.0.0.1', port: 0 })
    try {
      const started = Date.now()
      const body = await (await fetch(`${orphan.url}/v1/health`)).json()
      expect(Date.now() - started).toBeLessThan(3000)
      expect(body).toMatchObject({ status: 'degraded', database: { reachable: true }, sidecar: { reachable: false } })
    } finally {
      await orphan.close()
    }
  })

  it('says degraded when the database answers but cannot be written (a write lock held elsewhere)', async () => {
    // Its own connection with a short busy timeout: a write waiting for the lock blocks its thread.
    const own = await openStorage({ url: sidecar.databaseUrl, busyTimeoutMs: 100 })
    const locked = await startNodeApi({ storage: own, sidecarUrl: sidecar.url, sidecarSecret: sidecar.secret, host: '127.0.0.1', port: 0 })
    const lock = await storage.client.transaction('write')
    try {
      await lock.execute(`INSERT INTO health_probes (writer, checked_at) VALUES ('lock', 1) ON CONFLICT DO NOTHING`)
      const body = await (await fetch(`${locked.url}/v1/health`)).json()
      expect(body).toMatchObject({ status: 'degraded', database: { reachable: true, writable: false } })
      expect(body.problems).toEqual([{ code: 'database/not-writable', source: 'api', message: expect.stringMatching(/locked|busy/i) }])
    } finally {
      await lock.rollback()
      lock.close()
      await locked.close()
      own.close()
    }
  })

  it('says degraded, from the API and the sidecar, when the database file is deleted or replaced under them', async () => {
    const path = sidecar.databaseUrl.slice('file:'.length)
    const aside = `${path}.aside`
    const health = async () => (await (await fetch(`${api.url}/v1/health`)).json()) as { status: string; problems: Array<{ code: string; source: string }> }
    renameSync(path, aside) // deleted, as far as the path goes (kept aside to put it back)
    try {
      const deleted = await health()
      expect(deleted.status).toBe('degraded')
      expect(deleted.problems.map((p) => `${p.source} ${p.code}`)).toEqual(['api database/file-deleted', 'sidecar database/file-deleted'])
      await health()
      // Logged once (per change of state, not per request), naming where the open file can still
      // be copied from.
      await waitFor(async () => sidecar.output().includes('DEGRADED (database/file-deleted)'), 10_000, 'the sidecar to log it')
      const logged = sidecar.output().split('\n').filter((l) => l.includes('DEGRADED'))
      expect(logged).toHaveLength(1) // once per change of state, not per request
      const fd = /\/proc\/\d+\/fd\/\d+/.exec(logged[0]!)![0]
      expect(readFileSync(fd).subarray(0, 15).toString()).toBe('SQLite format 3')
      copyFileSync(aside, path) // another file at the path
      const replaced = await health()
      expect(replaced.problems.map((p) => `${p.source} ${p.code}`)).toEqual(['api database/file-replaced', 'sidecar database/file-replaced'])
    } finally {
      rmSync(path, { force: true })
      renameSync(aside, path)
    }
    expect((await health()).status).toBe('ok')
    expect(sidecar.output()).toContain('termkeep sidecar: recovered: database/file-replaced no longer applies')
  })

  it('answers unknown routes with a typed 404', async () => {
    const response = await fetch(`${api.url}/v1/nope`)
    expect(response.status).toBe(404)
    expect((await response.json()).error.code).toBe('route/not-found')
  })
})
