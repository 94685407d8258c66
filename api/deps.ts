import type { Client } from '@libsql/client'
import type { Database } from '../storage/client.ts'
import type { FileFinding } from '../storage/findings.ts'
import type { Authority } from '../storage/authority.ts'
import type { OriginPolicy } from './auth/origin.ts'
import type { Fleet } from './hosts/fleet.ts'
import type { SidecarClient } from './sidecar-client.ts'
import type { StreamRoutes } from './stream-routes.ts'

/** Everything the stateless app needs; each runtime entry builds these and calls createApp. */
export interface AppDeps {
  db: Database
  client: Client
  /** Health's write probe's connection (storage/client.ts `probe`; default `client`). */
  probe?: Client
  /** The configured sidecar (SIDECAR_URL): the one host's, and health's (api/hosts/fleet.ts). */
  sidecar: SidecarClient
  /** TERMKEEP_FLEET_SECRET: each host's sidecar secret is derived from it and the host id. */
  fleetSecret?: string
  /** Name of the runtime serving the app, reported by health ("node", "deno", "workerd"). */
  runtime: string
  /** Where a filesystem is (the Node entry, a `file:` database): whether the database's path
   * still names the file this process opened (storage/node/file-identity.ts). */
  databaseFile?: () => FileFinding | undefined
  /** Which Origin and Host headers are answered (auth/origin.ts; default: loopback only). */
  origins?: OriginPolicy
  /** Test and benchmark knobs; production uses the named limits. */
  tuning?: {
    /** SSE comment heartbeat interval (default SSE_HEARTBEAT_MS). */
    heartbeatMs?: number
    /** Registry watch poll interval (default REGISTRY_POLL_MS). */
    registryPollMs?: number
    /**
     * End a registry watch (and a hosts watch) after this many polls (default: never). For runtimes that bound the
     * subrequests of one request (Workers + remote libSQL): the client reconnects with
     * Last-Event-ID and loses nothing.
     */
    registryWatchMaxPolls?: number
    /** How often a workflow events stream polls the run's log (default WORKFLOW_EVENTS_POLL_MS). */
    workflowEventsPollMs?: number
    /** End a workflow events stream after this many polls (default: never; as registryWatchMaxPolls). */
    workflowEventsMaxPolls?: number
    /** How long MCP tools retry a request whose outcome is unknown (default MCP_RETRY_MS). */
    mcpRetryMs?: number
  }
}

export interface AppEnv {
  Variables: {
    deps: AppDeps
    /** Which host's sidecar a live call goes to (api/hosts/fleet.ts). */
    fleet: Fleet
    auth: Authority
    /** The EventSource ticket the request came with, until `openStream` spends it (auth/guard.ts). */
    ticket: string | undefined
    /** The app's SSE routes (stream-routes.ts): what a ticket may open. */
    streams: StreamRoutes
  }
}
