/**
 * What the API-level benchmarks stand on: a real sidecar process and its database, one Node
 * server with createApp (and any bare baseline routes a scenario adds beside it, on the same
 * server), and an all-grants token. `close` stops and removes everything.
 */
import { serve } from '@hono/node-server'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Hono } from 'hono'
import { createApp } from '../api/app.ts'
import { hopMark } from '../common/hop-trace.ts'
import { createToken } from '../storage/tokens.ts'
import { withNodeRelays } from '../api/runtime/node-relay.ts'
import { nodeFetch } from '../api/runtime/node-transport.ts'
import { SidecarClient } from '../api/sidecar-client.ts'
import { GRANTS } from '../schema/grants.ts'
import { openStorage, type Storage } from '../storage/client.ts'
import { migrate } from '../storage/migrate.ts'
import { startSidecar, type RunningSidecar } from '../test/support/sidecar.ts'

export interface BenchStack {
  dir: string
  sidecar: RunningSidecar
  storage: Storage
  /** The server's base URL. */
  base: string
  /** `Authorization` for an all-grants token. */
  auth: Record<string, string>
  close(): Promise<void>
}

/** Marks each request's arrival in the app for the echo bench's hop split (common/hop-trace.ts). */
function traced<A extends unknown[], R>(fetch: (...args: A) => R): (...args: A) => R {
  return (...args) => {
    hopMark('API: request in')
    return fetch(...args)
  }
}

export async function startBenchStack(
  name: string,
  baseline?: (server: Hono, stack: { sidecar: RunningSidecar; storage: Storage }) => void,
  options: { sidecarEnv?: Record<string, string> } = {},
): Promise<BenchStack> {
  const dir = mkdtempSync(join(tmpdir(), `termkeep-bench-${name}-`))
  const sidecar = await startSidecar({ dataDir: join(dir, 'data'), env: options.sidecarEnv }) // beside workspaces in dir
  const storage = await openStorage({ url: sidecar.databaseUrl })
  await migrate(storage.client)
  const client = new SidecarClient({ url: sidecar.url, secret: sidecar.secret, fetch: nodeFetch })
  const server = new Hono()
  baseline?.(server, { sidecar, storage })
  server.route('/', createApp({ db: storage.db, client: storage.client, sidecar: client, runtime: 'node' }))
  const http = await new Promise<ReturnType<typeof serve>>((resolve) => {
    const s = serve({ fetch: withNodeRelays(traced(server.fetch)), hostname: '127.0.0.1', port: 0 }, () => resolve(s))
  })
  const address = http.address()
  const base = `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`
  const { secret } = await createToken(storage.db, { name: 'bench', grants: GRANTS, sessions: 'all' })
  return {
    dir,
    sidecar,
    storage,
    base,
    auth: { authorization: `Bearer ${secret}` },
    async close() {
      http.close()
      if ('closeAllConnections' in http) http.closeAllConnections()
      await sidecar.stop()
      storage.close()
      rmSync(dir, { recursive: true, force: true })
    },
  }
}
