/**
 * Two hosts behind one Node API on one sqld, as two machines would be: two sidecars with their
 * own data directories, host ids and secrets (each derived from the API's fleet secret), started
 * by pid and stopped by pid. `restart` brings a host back on its data directory (its keeper kept
 * its terminals); `slow: true` starts it through slow-keeper-link.mjs, which holds it between its
 * registration and its first answer.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { startNodeApi, type RunningApi } from '../../api/runtime/node.ts'
import { deriveHostSecret } from '../../common/crypto.ts'
import { GRANTS, type Grant } from '../../schema/grants.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { createToken } from '../../storage/tokens.ts'
import { startSidecar, type RunningSidecar } from './sidecar.ts'
import { startSqld, type RunningSqld } from './sqld.ts'

export const HOST_NAMES = ['alpha', 'beta'] as const
export type HostName = (typeof HOST_NAMES)[number]
const SLOW_LINK = new URL('./slow-keeper-link.mjs', import.meta.url).pathname

export interface TwoHosts {
  sqld: RunningSqld
  storage: Storage
  api: RunningApi
  fleetSecret: string
  /** A token with every grant, bound to all sessions. */
  token: string
  hosts: Record<HostName, { id: string; dataDir: string; sidecar: RunningSidecar }>
  /** Starts the host again on its data directory (the previous process must have ended). */
  restart(name: HostName, options?: { slow?: boolean }): Promise<RunningSidecar>
  stop(): Promise<void>
  /** A token bound to `sessions` with these grants (default every grant). */
  boundToken(sessions: string[], grants?: readonly Grant[]): Promise<string>
}

export async function startTwoHosts(env: Record<string, string> = {}): Promise<TwoHosts> {
  const fleetSecret = `fleet-${Math.random().toString(36).slice(2)}-secret-xxxxxxxx`
  const sqld = await startSqld()
  const dirs: string[] = []
  const hosts = {} as TwoHosts['hosts']
  const start = async (name: HostName, slow = false) => {
    const known = hosts[name]
    const dataDir = known?.dataDir ?? mkdtempSync(join(tmpdir(), `termkeep-${name}-`))
    if (!known) dirs.push(dataDir)
    const id = known?.id ?? `host-${name}-${Math.random().toString(36).slice(2, 8)}`
    writeFileSync(join(dataDir, 'host.id'), `${id}\n`)
    const sidecar = await startSidecar({
      databaseUrl: sqld.url,
      dataDir,
      secret: `not-the-fleet-secret-${name}-xxxxxxxx`,
      nodeArgs: slow ? ['--import', SLOW_LINK] : [],
      env: { SHELL: '/bin/bash', TERMKEEP_HOST: name, TERMKEEP_HOST_SECRET: await deriveHostSecret(fleetSecret, id), ...env },
    })
    hosts[name] = { id, dataDir, sidecar }
    return sidecar
  }
  for (const name of HOST_NAMES) await start(name)
  const storage = await openStorage({ url: sqld.url })
  const api = await startNodeApi({
    storage,
    sidecarUrl: hosts.alpha.sidecar.url,
    sidecarSecret: 'the-api-own-sidecar-secret-xxxxxxxx',
    fleetSecret,
    host: '127.0.0.1',
    port: 0,
  })
  const token = (await createToken(storage.db, { name: 'two hosts', grants: [...GRANTS], sessions: 'all' })).secret
  return {
    sqld,
    storage,
    api,
    fleetSecret,
    token,
    hosts,
    restart: (name, options = {}) => start(name, options.slow),
    boundToken: async (sessions, grants = GRANTS) =>
      (await createToken(storage.db, { name: 'bound', grants: [...grants], sessions })).secret,
    stop: async () => {
      await api.close()
      for (const name of HOST_NAMES) await hosts[name]?.sidecar.stop()
      storage.close()
      await sqld.stop()
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true })
    },
  }
}
