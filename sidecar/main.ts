/**
 * Sidecar process entry: validate configuration, open and migrate the database, claim a new host
 * generation, listen on loopback. Started by `termkeep serve` or on its own.
 */
import { serve } from '@hono/node-server'
import { mkdirSync } from 'node:fs'
import { ConfigError, parseConfig } from '../schema/config.ts'
import { hostGenerations } from '../schema/tables.ts'
import { openStorage } from '../storage/client.ts'
import { migrate } from '../storage/migrate.ts'
import { createSidecarApp } from './app.ts'
import { migrateLegacyRecords } from './display/legacy.ts'
import { DisplayService } from './display/service.ts'
import { EmulatorPool } from './emulator/emulator.ts'
import { DEFAULT_SHELLS_FILE } from './pty/shells.ts'
import { TerminalHost } from './terminals/host.ts'
import { TerminalStore } from './terminals/store.ts'

const LOOPBACK = new Set(['127.0.0.1', 'localhost', '[::1]'])

async function main(): Promise<void> {
  const config = parseConfig(process.env)
  const listen = new URL(config.sidecarUrl)
  if (!LOOPBACK.has(listen.hostname)) {
    throw new ConfigError('SIDECAR_URL', 'the sidecar listens on loopback only (127.0.0.1, localhost or [::1])', config.sidecarUrl)
  }
  if (!config.sidecarSecret) {
    throw new ConfigError('SIDECAR_SECRET', 'required for the sidecar (termkeep serve generates one)', '')
  }
  mkdirSync(config.dataDir, { recursive: true })
  const storage = await openStorage({ url: config.databaseUrl, authToken: config.databaseAuthToken })
  await migrate(storage.client)
  await migrateLegacyRecords(storage.db) // once per legacy text-only record (data_migrations ledger)
  const [{ generation }] = await storage.db
    .insert(hostGenerations)
    .values({ pid: process.pid, startedAt: Date.now() })
    .returning({ generation: hostGenerations.generation })
  const emulators = new EmulatorPool(undefined, new DisplayService(storage.db).observer) // settles display revisions
  const terminals = new TerminalHost({
    store: new TerminalStore(storage.db),
    emulators,
    generation,
    dataDir: config.dataDir,
    shellsFile: process.env.TERMKEEP_SHELLS_FILE || DEFAULT_SHELLS_FILE,
    idleReclaimMs: idleReclaimMs(process.env.TERMKEEP_TERMINAL_IDLE_MS),
  })
  await terminals.start()
  const app = createSidecarApp({
    storage,
    secret: config.sidecarSecret,
    generation,
    terminals,
    filesAllowOutside: config.filesAllowOutside,
  })
  const port = Number(listen.port || 80)
  const server = serve({ fetch: app.fetch, hostname: listen.hostname.replace(/^\[|\]$/g, ''), port }, (info) => {
    console.log(`termkeep sidecar: generation ${generation} listening on ${listen.hostname}:${info.port}`)
    process.send?.({ type: 'ready', port: info.port, generation })
  })
  let stopping = false
  const stop = async () => {
    if (stopping) return
    stopping = true
    server.close()
    if ('closeAllConnections' in server) server.closeAllConnections()
    // Kill every terminal's processes, release journals and mark rows retired before the db closes.
    await terminals.shutdown().catch((error: unknown) => console.error('termkeep sidecar: shutdown', error))
    await emulators.close()
    storage.close()
    process.exit(0)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
  // Started by `termkeep serve` (an IPC channel exists): a parent that dies without stopping us
  // must not leave an orphan sidecar holding its PTYs and port.
  if (process.send) process.once('disconnect', stop)
}

/** TERMKEEP_TERMINAL_IDLE_MS (sidecar only): idle reclamation delay; unset = the default. */
function idleReclaimMs(raw: string | undefined): number | undefined {
  if (raw === undefined || raw === '') return undefined
  if (!/^\d{1,10}$/.test(raw)) throw new ConfigError('TERMKEEP_TERMINAL_IDLE_MS', 'milliseconds, a non-negative integer', raw)
  return Number(raw)
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error)
  process.exit(1)
})
