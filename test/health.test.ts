/**
 * The Node API next to a real sidecar process: health reports the database (answers, can be
 * written without waiting for another's lock, still the file opened) and the sidecar, and says
 * `degraded` with each problem.
 */
import { copyFileSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startNodeApi, type RunningApi } from '../api/runtime/node.ts'
import { openStorage, type Storage } from '../storage/client.ts'
import { migrate } from '../storage/migrate.ts'
import { DB_LOCK_DEGRADED_MS, DB_WRITE_PROBE_MS } from '../schema/limits.ts'
import { SIDECAR_LIVENESS_TIMEOUT_MS } from '../api/tuning.ts'
import type { Health, SidecarHealth } from '../schema/wire/health.ts'
import { freePort, waitFor } from './support/ports.ts'
import { runQueueWaitMs } from './support/schedstat.ts'
import { startSidecar, type RunningSidecar } from './support/sidecar.ts'
import { probeNamespaces } from '../sidecar/workflows/process.ts'

/** How the sidecar runs workflow scripts here: in namespaces where this kernel allows them (test
 * sidecars run with TERMKEEP_WORKFLOW_NAMESPACES=optional, so runs start either way). */
const WORKFLOWS = (await probeNamespaces()).wrapper
  ? { available: true, namespaces: true }
  : { available: true, namespaces: false, reason: expect.stringMatching(/^scripts run without namespaces/) }
import { SidecarHttp } from './support/terminals.ts'
import { holdWriteLock } from './support/write-lock.ts'

describe('GET /v1/health', () => {
  let sidecar: RunningSidecar
  let storage: Storage
  let api: RunningApi

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-health-'))
    sidecar = await startSidecar({ dataDir })
    storage = await openStorage({ url: sidecar.databaseUrl })
    await migrate(storage.client)
    api = await startNodeApi({
      storage,
      sidecarUrl: sidecar.url,
      sidecarSecret: sidecar.secret,
      host: '127.0.0.1',
      port: 0,
      databaseUrl: sidecar.databaseUrl,
    })
  })
  afterAll(async () => {
    await api?.close()
    await sidecar?.stop()
    storage?.close()
  })

  it('reports the database and the sidecar reachable', async () => {
    // The sidecar says how it runs workflow scripts once it found out (a second or so after it
    // starts); health shows its answer fresh when it came within the wait (HEALTH_WAIT_MS).
    const response = await waitFor(async () => {
      const answer = await fetch(`${api.url}/v1/health`)
      const { sidecar: shown } = await answer.clone().json()
      return shown.workflows !== undefined && shown.waitingMs === undefined && answer
    })
    expect(response.status).toBe(200)
    expect(await response.json()).toEqual({
      status: 'ok',
      runtime: 'node',
      database: { reachable: true, writable: true },
      sidecar: { reachable: true, generation: sidecar.generation, workflows: WORKFLOWS, ageMs: expect.any(Number) },
      problems: [],
    })
  })

  it('reports a sidecar with the wrong secret as unreachable', async () => {
    const wrong = await startNodeApi({
      storage,
      sidecarUrl: sidecar.url,
      sidecarSecret: 'not-the-secret-at-all',
      host: '127.0.0.1',
      port: 0,
    })
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
    const orphan = await startNodeApi({
      storage,
      sidecarUrl: `http://127.0.0.1:${port}`,
      sidecarSecret: sidecar.secret,
      host: '127.0.0.1',
      port: 0,
    })
    try {
      const started = Date.now()
      const body = await (await fetch(`${orphan.url}/v1/health`)).json()
      expect(Date.now() - started).toBeLessThan(3000)
      expect(body).toMatchObject({ status: 'degraded', database: { reachable: true }, sidecar: { reachable: false } })
    } finally {
      await orphan.close()
    }
  })

  it('never waits for a write lock another process holds: health and other routes answer at once, ok with a note, then database/locked, then ok', async () => {
    const holder = holdWriteLock(sidecar.databaseUrl)
    const http = new SidecarHttp(sidecar)
    try {
      await holder.locked
      const seen: Array<{ api: Health; sidecar: SidecarHealth }> = []
      let worst = 0
      const until = performance.now() + DB_WRITE_PROBE_MS + DB_LOCK_DEGRADED_MS + 1_000
      while (performance.now() < until) {
        const before = [runQueueWaitMs(process.pid), runQueueWaitMs(sidecar.pid)]
        const started = performance.now()
        const [a, b, route] = await Promise.all([
          fetch(`${api.url}/v1/health`).then((r) => r.json() as Promise<Health>),
          http.json<SidecarHealth>('GET', '/v1/health'),
          http.json('POST', '/v1/paths/canonicalize', { json: { path: '/tmp' } }),
        ])
        const took = performance.now() - started
        const after = [runQueueWaitMs(process.pid), runQueueWaitMs(sidecar.pid)]
        // Time the box gave neither process a CPU is not time this code blocked.
        worst = Math.max(worst, took - Math.max(after[0]! - before[0]!, after[1]! - before[1]!))
        expect(route.status).toBe(200)
        seen.push({ api: a, sidecar: b.body })
        await new Promise((r) => setTimeout(r, 100))
      }
      expect(worst, 'the slowest round of health + health + a sidecar route, in ms').toBeLessThan(250)
      // Each found the lock at its next probe (within DB_WRITE_PROBE_MS): a note at first (a
      // writer's own transaction is normal), degraded once it was held DB_LOCK_DEGRADED_MS.
      const states = seen.map(({ api: a }) => (a.status === 'degraded' ? 'locked' : a.database.note ? 'note' : 'ok'))
      expect(states.join(' ')).toMatch(/^(ok )*(note )+(locked ?)+$/)
      const noted = seen.find(({ api: a }) => a.database.note)!.api
      expect(noted).toMatchObject({
        status: 'ok',
        database: { reachable: true, writable: true, note: expect.stringContaining('another connection holds the write lock') },
        problems: [],
      })
      const last = seen.at(-1)!
      expect(last.api.database.writable).toBe(false)
      expect(last.api.problems.map((p) => `${p.source} ${p.code}`)).toEqual(['api database/locked', 'sidecar database/locked'])
      expect(last.sidecar).toMatchObject({ status: 'degraded', database: { writable: false } })
    } finally {
      await holder.release()
    }
    await waitFor(async () => ((await (await fetch(`${api.url}/v1/health`)).json()) as Health).status === 'ok', 5_000, 'health to recover')
    expect(sidecar.output()).toContain('termkeep sidecar: recovered: database/locked no longer applies')
  })

  it('says degraded, from the API and the sidecar, when the database file is deleted or replaced under them', async () => {
    const path = sidecar.databaseUrl.slice('file:'.length)
    const aside = `${path}.aside`
    const health = async () =>
      (await (await fetch(`${api.url}/v1/health`)).json()) as { status: string; problems: Array<{ code: string; source: string }> }
    renameSync(path, aside) // deleted, as far as the path goes (kept aside to put it back)
    try {
      const deleted = await health()
      expect(deleted.status).toBe('degraded')
      expect(deleted.problems.map((p) => `${p.source} ${p.code}`)).toEqual(['api database/file-deleted', 'sidecar database/file-deleted'])
      await health()
      // Logged once (per change of state, not per request), naming where the open file can still
      // be copied from.
      await waitFor(async () => sidecar.output().includes('DEGRADED (database/file-deleted)'), 10_000, 'the sidecar to log it')
      const logged = sidecar
        .output()
        .split('\n')
        .filter((l) => l.includes('DEGRADED (database/file-deleted)'))
      expect(logged).toHaveLength(1) // once per change of state, not per request
      const fd = /\/proc\/\d+\/fd\/\d+/.exec(logged[0]!)![0]
      expect(readFileSync(fd).subarray(0, 15).toString()).toBe('SQLite format 3')
      copyFileSync(aside, path) // another file at the path
      const replaced = await health()
      expect(replaced.problems.map((p) => `${p.source} ${p.code}`)).toEqual([
        'api database/file-replaced',
        'sidecar database/file-replaced',
      ])
    } finally {
      rmSync(path, { force: true })
      renameSync(aside, path)
    }
    expect((await health()).status).toBe('ok')
    expect(sidecar.output()).toContain('termkeep sidecar: recovered: database/file-replaced no longer applies')
  })

  it('never waits for a stopped sidecar (SIGSTOP): within 250 ms, the state last known with its age, then unreachable', async () => {
    // Answered in time: fresh (on a loaded box a first ask may take longer than the wait).
    const before = await waitFor(async () => {
      const health = (await (await fetch(`${api.url}/v1/health`)).json()) as Health
      return health.sidecar.reachable && health.sidecar.waitingMs === undefined && health
    }, 10_000)
    expect(before.sidecar.ageMs).toBeLessThan(100)
    process.kill(sidecar.pid, 'SIGSTOP')
    const seen: Array<{ at: number; health: Health }> = []
    let worst = 0
    const stoppedAt = performance.now()
    try {
      while (performance.now() - stoppedAt < SIDECAR_LIVENESS_TIMEOUT_MS + 1_500) {
        const waited = runQueueWaitMs(process.pid)
        const started = performance.now()
        const health = (await (await fetch(`${api.url}/v1/health`)).json()) as Health
        // Time the box gave this process no CPU is not time health waited.
        worst = Math.max(worst, performance.now() - started - (runQueueWaitMs(process.pid) - waited))
        seen.push({ at: performance.now() - stoppedAt, health })
        await new Promise((r) => setTimeout(r, 200))
      }
    } finally {
      process.kill(sidecar.pid, 'SIGCONT')
    }
    expect(worst, 'the slowest health answer while the sidecar was stopped, in ms').toBeLessThan(250)
    // First the state last known, older at each answer, with how long its health has been waited for…
    const stale = seen.filter(({ health }) => health.sidecar.reachable)
    expect(stale.length).toBeGreaterThan(3)
    for (const { health } of stale) {
      expect(health).toMatchObject({ status: 'ok', sidecar: { generation: sidecar.generation, waitingMs: expect.any(Number) } })
    }
    const ages = stale.map(({ health }) => health.sidecar.ageMs)
    expect(ages).toEqual([...ages].sort((a, b) => a - b))
    expect(ages.at(-1)! - ages[0]!).toBeGreaterThan(2_000)
    // …then, once its health went unanswered past the liveness deadline, unreachable.
    const last = seen.at(-1)!.health
    expect(last).toMatchObject({ status: 'degraded', sidecar: { reachable: false } })
    expect(last.problems.map((p) => p.code)).toContain('sidecar/unreachable')
    await waitFor(
      async () => ((await (await fetch(`${api.url}/v1/health`)).json()) as Health).status === 'ok',
      10_000,
      'health once resumed',
    )
  })

  it('answers unknown routes with a typed 404', async () => {
    const response = await fetch(`${api.url}/v1/nope`)
    expect(response.status).toBe(404)
    expect((await response.json()).error.code).toBe('route/not-found')
  })
})
