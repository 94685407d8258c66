/**
 * What the API-level benchmarks stand on: a real sidecar process and its database, one Node
 * server with createApp (and any bare baseline routes a scenario adds beside it, on the same
 * server), and an all-grants token. `close` stops and removes everything.
 */
import { type ChildProcess, spawn } from 'node:child_process'
import { serve } from '@hono/node-server'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { Hono } from 'hono'
import { createApp } from '../api/app.ts'
import { createToken } from '../storage/tokens.ts'
import { withNodeRelays } from '../api/runtime/node-relay.ts'
import { nodeFetch } from '../api/runtime/node-transport.ts'
import { SidecarClient } from '../api/sidecar-client.ts'
import { GRANTS } from '../schema/grants.ts'
import { openStorage, type Storage } from '../storage/client.ts'
import { migrate } from '../storage/migrate.ts'
import { startSidecar, type RunningSidecar } from '../test/support/sidecar.ts'
import { freePort, waitFor } from '../test/support/ports.ts'
import { UNSET_CONFIG } from '../test/smoke/targets.ts'

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
    const s = serve({ fetch: withNodeRelays(server.fetch), hostname: '127.0.0.1', port: 0 }, () => resolve(s))
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

export interface ApiProcess {
  url: string
  pid: number
  stop(): Promise<void>
}

/** `termkeep serve --api-only` (what `npm run start:api` runs) against the stack's database and
 * sidecar, on a free port. */
export async function apiProcess(
  sidecar: { url: string; secret: string; databaseUrl: string },
  env: Record<string, string> = {},
): Promise<ApiProcess> {
  const port = await freePort()
  const child: ChildProcess = spawn(process.execPath, [fileURLToPath(new URL('../cli/bin.js', import.meta.url)), 'serve', '--api-only'], {
    env: {
      ...process.env,
      ...UNSET_CONFIG,
      DATABASE_URL: sidecar.databaseUrl,
      SIDECAR_URL: sidecar.url,
      SIDECAR_SECRET: sidecar.secret,
      HOST: '127.0.0.1',
      PORT: String(port),
      ...env,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  })
  const url = `http://127.0.0.1:${port}`
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  await waitFor(
    async () => {
      if (child.exitCode !== null) throw new Error(`serve --api-only exited with ${child.exitCode}`)
      return (await fetch(`${url}/v1/health`).catch(() => undefined))?.ok
    },
    60_000,
    'the API process',
  )
  return {
    url,
    pid: child.pid!,
    async stop() {
      child.kill('SIGTERM')
      await exited
    },
  }
}
