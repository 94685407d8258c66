import type { Client } from '@libsql/client'
import type { Database } from '../storage/client.ts'
import type { FileFinding } from '../storage/health.ts'
import type { Authority } from './auth/guard.ts'
import type { SidecarClient } from './sidecar-client.ts'

/** Everything the stateless app needs; each runtime entry builds these and calls createApp. */
export interface AppDeps {
  db: Database
  client: Client
  sidecar: SidecarClient
  /** Name of the runtime serving the app, reported by health ("node", "deno", "workerd"). */
  runtime: string
  /** Where a filesystem is (the Node entry, a `file:` database): whether the database's path
   * still names the file this process opened (storage/file-identity.ts). */
  databaseFile?: () => FileFinding | undefined
  /** Test and benchmark knobs; production uses the named limits. */
  tuning?: {
    /** SSE comment heartbeat interval (default SSE_HEARTBEAT_MS). */
    heartbeatMs?: number
    /** Registry watch poll interval (default REGISTRY_POLL_MS). */
    registryPollMs?: number
    /**
     * End a registry watch after this many polls (default: never). For runtimes that bound the
     * subrequests of one request (Workers + remote libSQL): the client reconnects with
     * Last-Event-ID and loses nothing.
     */
    registryWatchMaxPolls?: number
  }
}

export interface AppEnv {
  Variables: {
    deps: AppDeps
    auth: Authority
    /** The EventSource ticket the request came with, until `openStream` spends it (auth/guard.ts). */
    ticket: string | undefined
  }
}
