/**
 * Node entry for the API: builds the dependencies and serves createApp with @hono/node-server
 * (./node-server.ts, which also answers what Node refuses before the app in the error shape); the
 * sidecar is reached over node:http (./node-transport.ts) and relayed streams skip web streams
 * (./node-relay.ts).
 */
import type { AddressInfo } from 'node:net'
import { HOP_TRACE_TARGET, hopMark } from '../../common/hop-trace.ts'
import { LISTEN_BACKLOG } from '../../schema/limits.ts'
import type { Storage } from '../../storage/client.ts'
import { DatabaseFile } from '../../storage/node/file-identity.ts'
import { createApp } from '../app.ts'
import { originPolicy } from '../auth/origin.ts'
import type { AppDeps } from '../deps.ts'
import { primeHealth } from '../routes/health.ts'
import { SidecarClient } from '../sidecar-client.ts'
import { withNodeRelays } from './node-relay.ts'
import { createNodeServer } from './node-server.ts'
import { nodeFetch } from './node-transport.ts'

export interface NodeApiOptions {
  storage: Storage
  sidecarUrl: string
  sidecarSecret: string
  /** TERMKEEP_FLEET_SECRET: each host's sidecar secret is derived from it (api/hosts/fleet.ts). */
  fleetSecret?: string
  host: string
  /** 0 picks a free port. */
  port: number
  /** The database's URL: for a `file:` one, health checks that its path still names the file
   * opened (storage/node/file-identity.ts). */
  databaseUrl?: string
  /** TERMKEEP_ALLOWED_ORIGINS and TERMKEEP_ALLOWED_HOSTS (auth/origin.ts); default none. */
  allowed?: { allowedOrigins: readonly string[]; allowedHosts: readonly string[] | undefined }
}

export interface RunningApi {
  url: string
  port: number
  close(): Promise<void>
}

export function startNodeApi({
  storage,
  sidecarUrl,
  sidecarSecret,
  fleetSecret,
  host,
  port,
  databaseUrl,
  allowed,
}: NodeApiOptions): Promise<RunningApi> {
  const file = databaseUrl === undefined ? undefined : DatabaseFile.opened(databaseUrl)
  const deps: AppDeps = {
    db: storage.db,
    client: storage.client,
    probe: storage.probe,
    sidecar: new SidecarClient({ url: sidecarUrl, secret: sidecarSecret, fetch: nodeFetch }),
    fleetSecret,
    runtime: 'node',
    databaseFile: file && (() => file.check()),
    origins: originPolicy(allowed ?? { allowedOrigins: [], allowedHosts: undefined }, host),
  }
  const app = createApp(deps)
  // The echo bench's first hop inside the API (common/hop-trace.ts); nothing is wrapped otherwise.
  const fetch: typeof app.fetch =
    HOP_TRACE_TARGET === undefined
      ? app.fetch
      : (...args) => {
          hopMark('API: request in')
          return app.fetch(...args)
        }
  return new Promise((resolve, reject) => {
    const server = createNodeServer(withNodeRelays(fetch), host)
    server.listen({ port, host, backlog: LISTEN_BACKLOG }, () => {
      primeHealth(deps)
      const info = server.address() as AddressInfo
      const shownHost = host.includes(':') ? `[${host}]` : host
      resolve({
        url: `http://${shownHost}:${info.port}`,
        port: info.port,
        close: () =>
          new Promise<void>((done) => {
            server.close(() => done())
            // Open SSE streams would hold close() forever; end them.
            server.closeAllConnections()
          }),
      })
    })
    server.once('error', reject)
  })
}
