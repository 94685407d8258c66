/**
 * Sidecar process entry: validate configuration, take the data directory, reach its keeper
 * (starting one), listen on loopback, open and migrate the database, claim a new host
 * generation, adopt the keeper's terminals, then serve. Everything that could make a second
 * sidecar fail (the data directory, the port) comes before the claim, which refuses to start
 * while an earlier generation on the same database still runs. Started by `termkeep serve` or on
 * its own; stopping it leaves the terminals running in the keeper.
 */
import { createAdaptorServer } from '@hono/node-server'
import { realpathSync } from 'node:fs'
import type { Server as HttpServer } from 'node:http'
import type { Server } from 'node:net'
import { dirname } from 'node:path'
import { ConfigError, parseConfig } from '../schema/config.ts'
import { TermkeepError } from '../schema/errors.ts'
import { LISTEN_BACKLOG } from '../schema/limits.ts'
import { DB_FILE_CHECK_MS, SIDECAR_KEEP_ALIVE_MS } from './tuning.ts'
import { openStorage } from '../storage/client.ts'
import { DatabaseFile } from '../storage/node/file-identity.ts'
import { lowSpace } from '../storage/node/free-space.ts'
import { StorageHealth } from '../storage/health.ts'
import { migrate } from '../storage/migrate.ts'
import { createSidecarApp } from './app.ts'
import { CommandStore } from '../storage/commands.ts'
import { SIDECAR_NODE_FLAGS } from './node-flags.ts'
import { ensureDataDir } from './data-dir.ts'
import { declareOwnState } from './files/own-state.ts'
import { DataDirBusy, lockDataDir } from './data-dir-lock.ts'
import { migrateLegacyRecords } from './display/legacy.ts'
import { DisplayService } from './display/service.ts'
import { EmulatorPool } from './emulator/emulator.ts'
import { claimGeneration, GenerationBusy } from './generations/claim.ts'
import { hostIdentity } from './generations/host-identity.ts'
import { adoptUnhosted, registerHost } from '../storage/hosts.ts'
import { DEFAULT_SHELLS_FILE } from './pty/shells.ts'
import { KeeperRefused } from '../local/keeper/client.ts'
import { KeeperStartError, reachKeeper } from '../local/keeper/start.ts'
import { SOFTWARE_VERSION } from '../local/version.ts'
import { writeFailures } from './write-retry.ts'
import { TerminalHost } from './terminals/host.ts'
import { TerminalStore } from '../storage/terminals.ts'
import { WorkflowEngine } from './workflows/engine.ts'
import { establishSandbox, NAMESPACES_VARIABLE, namespaceMode, sandboxWarning } from './workflows/sandbox.ts'
import { AGENTS_VARIABLE, loadProfiles } from './workflows/profiles.ts'
import { WorkflowReader } from './workflows/read-text.ts'
import { RunStore } from './workflows/run-log.ts'
import { writeHopTrace } from '../local/hop-trace.ts'

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

async function main(): Promise<void> {
  writeHopTrace()
  const config = parseConfig(process.env)
  const listen = new URL(config.sidecarUrl)
  if (!LOOPBACK.has(listen.hostname)) {
    throw new ConfigError('SIDECAR_URL', 'the sidecar listens on loopback only (127.0.0.1, localhost or [::1])', config.sidecarUrl)
  }
  const profiles = loadProfiles(process.env[AGENTS_VARIABLE]) // sub-agent programs of workflow runs
  const namespaces = namespaceMode(process.env[NAMESPACES_VARIABLE]) // whether scripts may run without them
  const openDir = ensureDataDir(config.dataDir)
  if (openDir) console.warn(`termkeep sidecar: warning: ${openDir}`)
  // The launchers pass SIDECAR_NODE_FLAGS; a sidecar started by hand without them still runs.
  if (typeof (globalThis as { gc?: unknown }).gc !== 'function') {
    console.warn(
      `termkeep sidecar: warning: started without --expose-gc, so idle emulators' memory is not returned (start it with node ${SIDECAR_NODE_FLAGS.join(' ')}, as npm run sidecar does)`,
    )
  }
  const unlock = lockDataDir(config.dataDir)
  process.once('exit', unlock)
  // Never served by any file route: the database, the journals, the secret (files/own-state.ts).
  declareOwnState({ dataDir: config.dataDir, databaseUrl: config.databaseUrl })
  // Listening first: until the host is ready, requests get 503 sidecar/unavailable.
  let ready: ReturnType<typeof createSidecarApp>['fetch'] | undefined
  const starting = new TermkeepError('sidecar/unavailable', 'the sidecar is starting')
  const port = Number(listen.port || 80)
  const server = createAdaptorServer({
    fetch: (request, env) => (ready ? ready(request, env) : Response.json(starting.toBody(), { status: starting.status })),
  }) as HttpServer
  server.keepAliveTimeout = SIDECAR_KEEP_ALIVE_MS
  server.listen({ port, host: listen.hostname.replace(/^\[|\]$/g, ''), backlog: LISTEN_BACKLOG })
  await listening(server as Server, `${listen.hostname}:${port}`)
  const bound = (server as Server).address()
  const boundPort = typeof bound === 'object' && bound ? bound.port : port
  // Which host this is, and the secret it accepts (TERMKEEP_HOST_SECRET, else SIDECAR_SECRET).
  const identity = hostIdentity(config, new URL(`${listen.protocol}//${listen.hostname}:${boundPort}`))
  const host = identity.registration
  // The keeper is reached (or started: tsx compiles it meanwhile) while the database opens.
  const reach = () => reachKeeper(config.dataDir, { role: 'sidecar', software: SOFTWARE_VERSION, start: true })
  let firstKeeper: ReturnType<typeof reach> | undefined = reach()
  firstKeeper.catch(() => {}) // awaited by the terminal host's start
  const busyTimeoutMs = milliseconds('TERMKEEP_DB_BUSY_TIMEOUT_MS', process.env.TERMKEEP_DB_BUSY_TIMEOUT_MS)
  const storage = await openStorage({ url: config.databaseUrl, authToken: config.databaseAuthToken, busyTimeoutMs })
  await migrate(storage.client)
  // The file just opened: from now on its path must keep naming it (storage/node/file-identity.ts).
  const databaseFile = DatabaseFile.opened(config.databaseUrl)
  await migrateLegacyRecords(storage.db) // once per legacy text-only record (data_migrations ledger)
  // Refused (GenerationBusy) while an earlier sidecar of this host still runs: its terminals are
  // not ours to retire. Other hosts' generations are theirs (storage/generations.ts).
  const claimed = await claimGeneration(storage.db, storage.probe, { hostId: host.id })
  // Registered once claimed: a refused start must not overwrite the running one's address.
  await registerHost(storage.db, host)
  await adoptUnhosted(storage.db, host.id)
  const { generation } = claimed
  if (claimed.ended.length > 0) {
    const list = claimed.ended.map((g) => `${g.generation} (${g.why})`).join(', ')
    console.error(`termkeep sidecar: earlier generation(s) ended: ${list}`)
  }
  const diskFreeMin = bytes('TERMKEEP_DISK_FREE_MIN_BYTES', process.env.TERMKEEP_DISK_FREE_MIN_BYTES)
  // Canonical, as the database file's directory is: the default database lies in the data
  // directory, and one directory is one statfs (and one name in the log), not two.
  const written = [realpathSync(config.dataDir), ...(databaseFile ? [dirname(databaseFile.path)] : [])]
  const health = new StorageHealth({
    client: storage.client,
    probe: storage.probe,
    writer: 'sidecar',
    file: databaseFile && (() => databaseFile.check()),
    space: () => lowSpace(written, diskFreeMin),
    writes: writeFailures,
  })
  await health.check()
  // Unasked, every few seconds: a deleted database or a filling disk is logged at once, not found
  // at the next start.
  const fileWatch = setInterval(() => health.checkFile(), DB_FILE_CHECK_MS).unref()
  const displays = new DisplayService(storage.db, {
    releaseMs: milliseconds('TERMKEEP_EMULATOR_RELEASE_MS', process.env.TERMKEEP_EMULATOR_RELEASE_MS),
  })
  const emulators = new EmulatorPool(undefined, displays.observer) // settles display revisions
  const pruning = displays.startPruning() // stopped terminals' old revisions
  const terminalStore = new TerminalStore(storage.db)
  const terminals = new TerminalHost({
    store: terminalStore,
    emulators,
    generation,
    dataDir: config.dataDir,
    shellsFile: process.env.TERMKEEP_SHELLS_FILE || DEFAULT_SHELLS_FILE,
    idleReclaimMs: milliseconds('TERMKEEP_TERMINAL_IDLE_MS', process.env.TERMKEEP_TERMINAL_IDLE_MS),
    keeper: () => {
      const keeper = firstKeeper ?? reach()
      firstKeeper = undefined
      return keeper
    },
    settled: (sessionId, id) => displays.settled(sessionId, id),
    linkBroken: (error) => {
      console.error(
        `termkeep sidecar: the connection to the keeper broke while the keeper runs (${error?.message ?? 'closed'}); stopping (a restarted sidecar adopts its terminals)`,
      )
      process.exit(1)
    },
    commands: new CommandStore(storage.db),
    shellIntegration: shellIntegration(process.env.TERMKEEP_SHELL_INTEGRATION),
    nonceKey: identity.secret,
  })
  const { adopted, retired } = await terminals.start()
  const keeper = terminals.keeper
  if (keeper) {
    const what = adopted > 0 ? `adopted ${adopted} terminal(s) from` : 'connected to'
    console.error(`termkeep sidecar: ${what} the keeper (pid ${keeper.pid}, termkeep ${keeper.software})`)
  }
  if (retired > 0) console.error(`termkeep sidecar: retired ${retired} terminal(s) whose keeper ended`)
  // Can scripts run here as configured? (the engine loads; a script process starts, in
  // namespaces) Found out while the sidecar starts serving: a start waits for the answer.
  const sandbox = establishSandbox(namespaces)
  void sandbox.then((state) => {
    const unconfined = sandboxWarning(state)
    if (unconfined) console.warn(unconfined)
  })
  const workflows = new WorkflowEngine({
    host: terminals,
    terminals: terminalStore,
    profiles,
    store: new RunStore(storage.db),
    reader: new WorkflowReader({ storage, secret: identity.secret, filesAllowOutside: config.filesAllowOutside }),
    generation,
    dataDir: config.dataDir,
    sandbox,
  })
  await workflows.start() // runs an earlier generation left running read as interrupted
  const app = createSidecarApp({
    storage,
    secret: identity.secret,
    generation,
    terminals,
    health,
    filesAllowOutside: config.filesAllowOutside,
    displays,
    workflows,
  })
  ready = app.fetch
  // Listed `up` from now on, not from the claim: the API reaches a host only once it answers.
  await claimed.serving()
  console.log(`termkeep sidecar: host ${host.name} (${host.id}) generation ${generation} listening on ${listen.hostname}:${boundPort}`)
  process.send?.({ type: 'ready', port: boundPort, generation, hostId: host.id })
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    server.close()
    if ('closeAllConnections' in server) server.closeAllConnections()
    clearInterval(pruning)
    clearInterval(fileWatch)
    // Script processes end with the sidecar (their runs read as interrupted after a restart).
    await workflows.shutdown().catch((error: unknown) => console.error('termkeep sidecar: stopping workflow runs', error))
    // The terminals go on in the keeper: last screens settled, rows written, nothing killed.
    const running = await terminals.detach().catch((error: unknown) => {
      console.error('termkeep sidecar: shutdown', error)
      return 0
    })
    await emulators.close()
    const held = terminals.keeper
    if (held) console.error(`termkeep sidecar: ${running} terminal(s) keep running in the keeper (pid ${held.pid})`)
    await claimed.end().catch((error: unknown) => console.error('termkeep sidecar: recording the end of this generation', error))
    await storage.shutdown()
    process.exit(0)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  // Started by `termkeep serve` (an IPC channel exists): a parent that dies without stopping us
  // must not leave an orphan sidecar holding its PTYs and port.
  if (process.send) process.once('disconnect', stop)
}

/** Resolves once the server listens; a taken port is a one-line start-up error. */
function listening(server: Server, where: string): Promise<void> {
  return new Promise((resolve, reject) => {
    if (server.listening) return resolve()
    server.once('listening', resolve)
    server.once('error', (error: NodeJS.ErrnoException) =>
      reject(
        error.code === 'EADDRINUSE' ? new StartError(`${where} is already in use (SIDECAR_URL); is termkeep already running?`) : error,
      ),
    )
  })
}

class StartError extends Error {}

/** A sidecar-only millisecond setting (TERMKEEP_TERMINAL_IDLE_MS, TERMKEEP_DB_BUSY_TIMEOUT_MS);
 * unset = the default. */
function milliseconds(name: string, raw: string | undefined): number | undefined {
  return wholeNumber(name, raw, 'milliseconds')
}

/** A sidecar-only byte count (TERMKEEP_DISK_FREE_MIN_BYTES); unset = the default. */
function bytes(name: string, raw: string | undefined): number | undefined {
  return wholeNumber(name, raw, 'bytes')
}

/** TERMKEEP_SHELL_INTEGRATION: `1` (the default) or `0` (no shell integration, docs/commands.md). */
function shellIntegration(raw: string | undefined): boolean {
  if (raw === undefined || raw === '' || raw === '1') return true
  if (raw === '0') return false
  throw new ConfigError('TERMKEEP_SHELL_INTEGRATION', '1 (on, the default) or 0 (off)', raw)
}

function wholeNumber(name: string, raw: string | undefined, unit: string): number | undefined {
  if (raw === undefined || raw === '') return undefined
  if (!/^\d{1,15}$/.test(raw)) throw new ConfigError(name, `${unit}, a non-negative integer`, raw)
  return Number(raw)
}

main().catch((error: unknown) => {
  const oneLine =
    error instanceof ConfigError ||
    error instanceof DataDirBusy ||
    error instanceof GenerationBusy ||
    error instanceof StartError ||
    error instanceof KeeperRefused ||
    error instanceof KeeperStartError
  console.error(oneLine ? `termkeep sidecar: ${error.message}` : error)
  process.exit(1)
})
