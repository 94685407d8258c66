/**
 * `termkeep serve` (what `npm start` runs): migrate the database, start the sidecar as a child
 * process and keep it running (a crashed one is started again, cli/supervise.ts), start the Node
 * API next to it, print the URL and (once) the admin token. The sidecar reaches the data
 * directory's keeper (starting it), which holds the terminals. Ctrl-C or SIGTERM stops the API,
 * then the sidecar, waits for the sidecar's own shutdown, and says how many terminals the keeper
 * keeps running (`termkeep stop --terminals` ends them).
 *
 * `termkeep serve --api-only` (`npm run start:api`) is the Node API alone, as the Deno and Workers
 * entries are: it migrates, then serves against the sidecar at SIDECAR_URL with SIDECAR_SECRET (or
 * the secret a `termkeep serve` on the same data directory generated); it never starts a sidecar.
 *
 * `termkeep serve --host-only` is the other half: this machine's sidecar (which reaches the keeper,
 * as under `serve`), kept running, a host joining the fleet's database (DATABASE_URL) with its own
 * secret (TERMKEEP_HOST_SECRET, from `termkeep hosts secret <id>` where the API runs); no API, no
 * admin token (docs/operations.md). Stopping it leaves the terminals in the keeper, as `serve` does.
 * With TERMKEEP_FLEET_SECRET, plain `serve` gives its own sidecar the secret derived for its host.
 */
import { fork } from 'node:child_process'
import { readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { ensureAdminToken } from '../storage/tokens.ts'
import { deriveHostSecret, randomSecret } from '../common/crypto.ts'
import { hostId } from '../sidecar/generations/host-identity.ts'
import { ensureDataDir } from '../sidecar/data-dir.ts'
import { writeHopTrace } from '../local/hop-trace.ts'
import { startNodeApi, type RunningApi } from '../api/runtime/node.ts'
import type { Config } from '../schema/config.ts'
import { openStorage, type Storage } from '../storage/client.ts'
import { hostSecretEpoch } from '../storage/hosts.ts'
import { migrate } from '../storage/migrate.ts'
import { sidecarLaunch, type SidecarLaunch } from '../sidecar/launch.ts'
import { SIDECAR_NODE_FLAGS, sidecarEnv } from '../sidecar/node-flags.ts'
import { keepRunningLine, keptRunning } from './keeper.ts'
import { SidecarSupervisor, type StartingSidecar } from './supervise.ts'
import { self } from './self.ts'

const SIDECAR_START_TIMEOUT_MS = 30_000

/** A database URL fit for a message: any password or query (an auth token) left out. */
function redactedUrl(url: string): string {
  try {
    const parsed = new URL(url)
    if (parsed.protocol === 'file:') return url
    parsed.password = ''
    parsed.search = ''
    return parsed.toString()
  } catch {
    return url
  }
}

/** The local pair's shared secret: from SIDECAR_SECRET, else generated once into the data dir. */
export function localSidecarSecret(config: Config): string {
  if (config.sidecarSecret) return config.sidecarSecret
  const file = join(config.dataDir, 'sidecar.secret')
  try {
    return readFileSync(file, 'utf8').trim()
  } catch {
    const secret = randomSecret('sc', 32)
    writeFileSync(file, `${secret}\n`, { mode: 0o600, flag: 'wx' })
    return readFileSync(file, 'utf8').trim()
  }
}

/** Starts one sidecar and resolves once it announced it is ready; one that exits first, or does not
 * get there in time (then it is killed), rejects. */
function startSidecar(launch: SidecarLaunch, config: Config, secret: string, hostSecret?: string): StartingSidecar {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    SIDECAR_SECRET: secret,
    SIDECAR_URL: config.sidecarUrl,
    DATABASE_URL: config.databaseUrl,
  }
  // The sidecar holds its host's secret only, never the fleet's.
  delete env.TERMKEEP_FLEET_SECRET
  if (hostSecret !== undefined) env.TERMKEEP_HOST_SECRET = hostSecret
  const child = fork(launch.entry, [], {
    execArgv: [...launch.execArgv, ...SIDECAR_NODE_FLAGS],
    env: sidecarEnv(env),
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  })
  const ready = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL')
      reject(new Error('the sidecar did not start in time'))
    }, SIDECAR_START_TIMEOUT_MS)
    const onExit = (code: number | null, signal: NodeJS.Signals | null) => {
      clearTimeout(timer)
      reject(new Error(`the sidecar exited during start-up (${signal ? `signal ${signal}` : `code ${code}`})`))
    }
    child.once('message', (message: { generation?: number }) => {
      clearTimeout(timer)
      child.off('exit', onExit)
      resolve(Number(message?.generation))
    })
    child.once('exit', onExit)
  })
  return { child, ready }
}

/** The database opened and migrated, or the process stopped with one line saying why. */
async function openMigrated(config: Config): Promise<Storage> {
  let storage: Storage | undefined
  try {
    storage = await openStorage({ url: config.databaseUrl, authToken: config.databaseAuthToken })
    const { applied } = await migrate(storage.client)
    if (applied > 0) console.log(`termkeep: applied ${applied} database migration(s)`)
  } catch (error) {
    const cause = (error as Error & { cause?: Error }).cause?.message
    const reason = `${(error as Error).message}${cause ? ` (${cause})` : ''}`.replace(/\s+/g, ' ')
    console.error(
      `termkeep: the database at ${redactedUrl(config.databaseUrl)} (DATABASE_URL) could not be opened or migrated: ${reason}; stopping`,
    )
    storage?.close()
    process.exit(1)
  }
  return storage
}

/** Starts the API and prints where it is and, the first time, the admin token; rejects when it
 * cannot listen (a taken port). */
async function startApi(config: Config, storage: Storage, secret: string): Promise<RunningApi> {
  writeHopTrace()
  const api = await startNodeApi({
    storage,
    sidecarUrl: config.sidecarUrl,
    sidecarSecret: secret,
    fleetSecret: config.fleetSecret,
    host: config.host,
    port: config.port,
    databaseUrl: config.databaseUrl,
    allowed: config,
  })
  const admin = await ensureAdminToken(storage.db, config.adminToken)
  console.log(`termkeep: API listening on ${api.url}`)
  console.log(`termkeep: web page at ${api.url}/ (sign in with a token)`)
  if (admin.secret) {
    console.log(`termkeep: admin token (shown once, stored hashed): ${admin.secret}`)
  } else {
    console.log(`termkeep: an admin token already exists; mint another with \`${self()} token create --grant admin\``)
  }
  return api
}

function apiFailed(config: Config, error: unknown): string {
  const reason = (error as NodeJS.ErrnoException).code === 'EADDRINUSE' ? `port ${config.port} is already in use` : String(error)
  return `termkeep: the API could not start: ${reason}; stopping`
}

/** `serve --api-only`: the Node API alone, against a sidecar started elsewhere. */
export async function serveApiOnly(config: Config): Promise<void> {
  const secret = config.sidecarSecret ?? existingSecret(config)
  if (!secret) {
    console.error(
      `termkeep: the API alone needs SIDECAR_SECRET (the secret its sidecar was started with), or a ${join(config.dataDir, 'sidecar.secret')} from termkeep serve; stopping`,
    )
    process.exit(1)
  }
  const storage = await openMigrated(config)
  let api: RunningApi
  try {
    api = await startApi(config, storage, secret)
  } catch (error) {
    console.error(apiFailed(config, error))
    storage.close()
    process.exit(1)
  }
  const stop = async () => {
    await api.close()
    storage.close()
    process.exit(0)
  }
  process.once('SIGINT', () => void stop())
  process.once('SIGTERM', () => void stop())
}

/** `serve --host-only`: this host's sidecar (and through it the keeper), kept running, for an API
 * elsewhere. */
export async function serveHostOnly(config: Config): Promise<void> {
  ensureDataDir(config.dataDir)
  const id = hostId(config.dataDir)
  const secret = config.hostSecret ?? config.sidecarSecret
  if (!secret) {
    console.error(
      `termkeep: a host needs its secret: TERMKEEP_HOST_SECRET=$(termkeep hosts secret ${id}), run where the API runs (with its TERMKEEP_FLEET_SECRET); stopping`,
    )
    process.exit(1)
  }
  await superviseSidecar(config, secret, config.hostSecret)
  console.log(`termkeep: host ${id} serving; the API reaches it at ${config.hostUrl ?? config.sidecarUrl} (TERMKEEP_HOST_URL)`)
}

/** What runs beside the sidecar in one serve: closed before it stops, after it stopped, or when it
 * failed to start. */
interface Beside {
  beforeSidecar?: () => Promise<void>
  afterSidecar?: () => Promise<void>
  failed?: () => void
}

/**
 * Starts this data directory's sidecar under supervision (a crash starts it again: cli/supervise.ts)
 * and stops serve with it: on SIGINT or SIGTERM, or when the sidecar stops cleanly by itself (it was
 * told to). Stopping waits for the sidecar's own shutdown (last screens saved, processes killed,
 * rows retired) and then says what the keeper keeps running. Returns that stop.
 */
async function superviseSidecar(
  config: Config,
  secret: string,
  hostSecret: string | undefined,
  beside: Beside = {},
): Promise<(code: number) => Promise<void>> {
  const launch = await sidecarLaunch()
  const sidecar = new SidecarSupervisor({
    start: () => startSidecar(launch, config, secret, hostSecret),
    log: (line) => console.error(line),
  })
  let stopping = false
  const stop = async (code: number) => {
    if (stopping) return
    stopping = true
    sidecar.stopping()
    await beside.beforeSidecar?.()
    await sidecar.stop()
    await beside.afterSidecar?.()
    const kept = keepRunningLine(await keptRunning(config.dataDir))
    if (kept) console.error(kept)
    process.exit(code)
  }
  try {
    await sidecar.start(() => void stop(1))
  } catch (error) {
    // The sidecar printed its own one-line reason (data directory in use, port taken, …).
    console.error(`termkeep: ${(error as Error).message}; stopping`)
    beside.failed?.()
    process.exit(1)
  }
  process.once('SIGINT', () => void stop(0))
  process.once('SIGTERM', () => void stop(0))
  return stop
}

function existingSecret(config: Config): string | undefined {
  try {
    return readFileSync(join(config.dataDir, 'sidecar.secret'), 'utf8').trim() || undefined
  } catch {
    return undefined
  }
}

export async function serveCommand(config: Config): Promise<void> {
  ensureDataDir(config.dataDir) // created private; the sidecar warns when it is not
  const storage = await openMigrated(config)
  const secret = localSidecarSecret(config)
  // In a fleet, this host's sidecar is reached with the secret derived for it (its current epoch:
  // a rotation takes effect at the next start), like any other.
  const id = hostId(config.dataDir)
  const hostSecret =
    config.fleetSecret === undefined ? undefined : await deriveHostSecret(config.fleetSecret, id, await hostSecretEpoch(storage.db, id))
  let api: RunningApi | undefined
  const stop = await superviseSidecar(config, secret, hostSecret, {
    beforeSidecar: async () => {
      await api?.close()
    },
    afterSidecar: () => storage.shutdown(),
    failed: () => storage.close(),
  })
  try {
    // Its own sidecar (health's) accepts its host's secret only, in a fleet.
    api = await startApi(config, storage, hostSecret ?? secret)
  } catch (error) {
    // Never leave the sidecar running behind a failed start (e.g. the API port is taken).
    console.error(apiFailed(config, error))
    return stop(1)
  }
}
