/**
 * What the Deno and Workers entries share: read the two settings only they have (AUTO_MIGRATE and
 * a required sidecar secret) and build AppDeps from a validated Config. Web APIs only, so it
 * bundles for Workers and type-checks under Deno and Node alike.
 */
import { ConfigError, type Config } from '../../schema/config.ts'
import { openStorage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'
import { originPolicy } from '../auth/origin.ts'
import type { AppDeps } from '../deps.ts'
import { SidecarClient } from '../sidecar-client.ts'

type Env = Readonly<Record<string, string | undefined>>

/** AUTO_MIGRATE: apply the bundled migrations at start. `whenUnset` is the runtime's default. */
export function autoMigrate(env: Env, whenUnset: boolean): boolean {
  const raw = env.AUTO_MIGRATE
  if (raw === undefined || raw === '') return whenUnset
  if (raw === '1' || raw === 'true') return true
  if (raw === '0' || raw === 'false') return false
  throw new ConfigError('AUTO_MIGRATE', 'one of 0, 1, true, false', raw)
}

/** The directory a `file:` URL's database lives in (it must exist before libSQL opens it). */
export function fileDatabaseDir(databaseUrl: string): string | undefined {
  if (!databaseUrl.startsWith('file:')) return undefined
  const path = decodeURIComponent(
    databaseUrl
      .slice('file:'.length)
      .split('?')[0]!
      .replace(/^\/\/(?=\/)/, ''),
  )
  const slash = path.lastIndexOf('/')
  return slash <= 0 ? (slash === 0 ? '/' : '.') : path.slice(0, slash)
}

export interface WireOptions {
  /** Reported by /v1/health: "deno", "workerd". */
  runtime: string
  sidecarSecret: string
  migrate: boolean
}

/** Opens storage (and migrates it when asked), builds the sidecar client: everything createApp needs. */
export async function wireDeps(config: Config, options: WireOptions): Promise<AppDeps> {
  const storage = await openStorage({ url: config.databaseUrl, authToken: config.databaseAuthToken })
  if (options.migrate) await migrate(storage.client)
  return {
    db: storage.db,
    client: storage.client,
    probe: storage.probe,
    sidecar: new SidecarClient({ url: config.sidecarUrl, secret: options.sidecarSecret }),
    fleetSecret: config.fleetSecret,
    runtime: options.runtime,
    // Deno and Workers cannot tell which names reach them: any Host unless some are configured.
    origins: originPolicy(config, undefined),
  }
}
