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
  const [{ generation }] = await storage.db
    .insert(hostGenerations)
    .values({ pid: process.pid, startedAt: Date.now() })
    .returning({ generation: hostGenerations.generation })
  const app = createSidecarApp({ storage, secret: config.sidecarSecret, generation, filesAllowOutside: config.filesAllowOutside })
  const port = Number(listen.port || 80)
  const server = serve({ fetch: app.fetch, hostname: listen.hostname.replace(/^\[|\]$/g, ''), port }, (info) => {
    console.log(`termkeep sidecar: generation ${generation} listening on ${listen.hostname}:${info.port}`)
    process.send?.({ type: 'ready', port: info.port, generation })
  })
  const stop = () => {
    server.close()
    if ('closeAllConnections' in server) server.closeAllConnections()
    storage.close()
    process.exit(0)
  }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error)
  process.exit(1)
})
