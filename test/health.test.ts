/** The Node API next to a real sidecar process: health reports database and sidecar reachability. */
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startNodeApi, type RunningApi } from '../api/runtime/node.ts'
import { openStorage, type Storage } from '../storage/client.ts'
import { migrate } from '../storage/migrate.ts'
import { freePort } from './support/ports.ts'
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
    api = await startNodeApi({ storage, sidecarUrl: sidecar.url, sidecarSecret: sidecar.secret, host: '127.0.0.1', port: 0 })
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
      database: { reachable: true },
      sidecar: { reachable: true, generation: sidecar.generation },
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

  it('answers unknown routes with a typed 404', async () => {
    const response = await fetch(`${api.url}/v1/nope`)
    expect(response.status).toBe(404)
    expect((await response.json()).error.code).toBe('route/not-found')
  })
})
