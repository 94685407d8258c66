/**
 * What the hosts benchmark stands on: one sqld (with its admin API, whose stats count the rows
 * written and the queries run) and N real sidecars on it, each its own host (data directory, host
 * id), behind the Node API. One host without a fleet secret is reached as every single-host
 * deployment is (SIDECAR_URL, SIDECAR_SECRET); several are reached through the fleet (each
 * host's secret derived from the fleet secret), the benchmark's session on the last of them, not
 * the API's configured one.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNodeApi, type RunningApi } from '../api/runtime/node.ts'
import { deriveHostSecret } from '../common/crypto.ts'
import { GRANTS } from '../schema/grants.ts'
import { openStorage, type Storage } from '../storage/client.ts'
import { migrate } from '../storage/migrate.ts'
import { createToken } from '../storage/tokens.ts'
import { startSidecar, type RunningSidecar } from '../test/support/sidecar.ts'
import { startSqld, type RunningSqld } from '../test/support/sqld.ts'

export interface FleetStack {
  sqld: RunningSqld
  storage: Storage
  sidecars: RunningSidecar[]
  api: RunningApi
  auth: Record<string, string>
  /** The benchmark's session (on the last host). */
  session: string
  close(): Promise<void>
}

/** sqld's own counters: rows written and statements run since it started. */
export interface SqldCounters {
  rowsWritten: number
  queries: number
}

export async function sqldCounters(sqld: RunningSqld): Promise<SqldCounters> {
  const stats = (await (await fetch(`${sqld.adminUrl}/v1/namespaces/default/stats`)).json()) as {
    rows_written_count: number
    query_count: number
  }
  return { rowsWritten: stats.rows_written_count, queries: stats.query_count }
}

export async function startFleetStack(hostCount: number): Promise<FleetStack> {
  const dir = mkdtempSync(join(tmpdir(), `termkeep-bench-hosts-${hostCount}-`))
  const fleetSecret = hostCount > 1 ? `bench-fleet-${Math.random().toString(36).slice(2)}-xxxxxxxx` : undefined
  const sqld = await startSqld({ admin: true })
  const storage = await openStorage({ url: sqld.url })
  await migrate(storage.client)
  const sidecars: RunningSidecar[] = []
  const secret = `bench-sidecar-secret-${Math.random().toString(36).slice(2)}-xx`
  try {
    for (let i = 0; i < hostCount; i++) {
      const dataDir = join(dir, `host-${i}`)
      const id = `bench-host-${hostCount}-${i}`
      const hostSecret: Record<string, string> =
        fleetSecret === undefined ? {} : { TERMKEEP_HOST_SECRET: await deriveHostSecret(fleetSecret, id) }
      mkdirSync(dataDir, { recursive: true })
      writeFileSync(join(dataDir, 'host.id'), `${id}\n`)
      sidecars.push(await startSidecar({ databaseUrl: sqld.url, dataDir, secret, env: { TERMKEEP_HOST: `host${i}`, ...hostSecret } }))
    }
  } catch (error) {
    for (const sidecar of sidecars) await sidecar.stop()
    throw error
  }
  const api = await startNodeApi({ storage, sidecarUrl: sidecars[0]!.url, sidecarSecret: secret, fleetSecret, host: '127.0.0.1', port: 0 })
  const { secret: token } = await createToken(storage.db, { name: 'bench', grants: GRANTS, sessions: 'all' })
  const auth = { authorization: `Bearer ${token}` }
  const session = `bench-${hostCount}`
  const created = await fetch(`${api.url}/v1/sessions`, {
    method: 'POST',
    headers: { ...auth, 'content-type': 'application/json' },
    body: JSON.stringify({ id: session, cwd: dir, ...(hostCount > 1 ? { host: `host${hostCount - 1}` } : {}) }),
  })
  if (created.status !== 201) throw new Error(`session answered ${created.status}: ${await created.text()}`)
  return {
    sqld,
    storage,
    sidecars,
    api,
    auth,
    session,
    async close() {
      await api.close()
      for (const sidecar of sidecars) await sidecar.stop()
      storage.close()
      await sqld.stop()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
