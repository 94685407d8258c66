/**
 * Hosts registering on one remote database (sqld): three sidecars with their own data directories
 * stand in for three machines. Each registers its id (kept in its data directory), name
 * (TERMKEEP_HOST), URL, version and capacity; a restart keeps the id and refreshes the rest; a
 * clean stop shows the host down. (Two sidecars of one host id: sidecar/generations/two-sidecars.)
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStorage, type Storage } from '../../storage/client.ts'
import { listHosts } from '../../storage/hosts.ts'
import { startSidecar, type RunningSidecar } from '../support/sidecar.ts'
import { startSqld, type RunningSqld } from '../support/sqld.ts'

const VERSION = (JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version
let sqld: RunningSqld
let storage: Storage
const sidecars: RunningSidecar[] = []

beforeAll(async () => {
  sqld = await startSqld()
  for (const name of ['alpha', 'beta', 'gamma']) {
    sidecars.push(await startSidecar({ databaseUrl: sqld.url, env: { TERMKEEP_HOST: name } }))
  }
  storage = await openStorage({ url: sqld.url })
}, 90_000)
afterAll(async () => {
  for (const sidecar of sidecars) await sidecar.stop()
  storage?.close()
  await sqld?.stop()
})

describe('hosts on one database', () => {
  it('registers each sidecar as its own host: id from its data directory, name, URL, version, capacity, up', async () => {
    const hosts = await listHosts(storage.db)
    expect(hosts.map((h) => h.name)).toEqual(['alpha', 'beta', 'gamma'])
    sidecars.forEach((sidecar, i) => {
      const host = hosts[i]!
      expect(host.id).toBe(sidecar.hostId)
      expect(readFileSync(`${sidecar.dataDir}/host.id`, 'utf8').trim()).toBe(host.id)
      expect(host.url).toBe(sidecar.url)
      expect(host.version).toBe(VERSION)
      expect(host.capacity.cpus).toBeGreaterThan(0)
      expect(host.capacity.memoryBytes).toBeGreaterThan(0)
      expect(host.generation).toBe(sidecar.generation)
      expect(host.up).toBe(true)
    })
    expect(new Set(hosts.map((h) => h.id)).size).toBe(3)
  })

  it('keeps the id across a restart and refreshes the name and URL; a clean stop is down', async () => {
    const beta = sidecars[1]!
    await beta.stop()
    expect((await listHosts(storage.db)).find((h) => h.id === beta.hostId)?.up).toBe(false)
    const again = await startSidecar({ databaseUrl: sqld.url, dataDir: beta.dataDir, env: { TERMKEEP_HOST: 'beta-2' } })
    sidecars[1] = again
    expect(again.hostId).toBe(beta.hostId)
    const hosts = await listHosts(storage.db)
    expect(hosts).toHaveLength(3)
    const host = hosts.find((h) => h.id === beta.hostId)!
    expect(host).toMatchObject({ name: 'beta-2', url: again.url, up: true, generation: again.generation })
    expect(again.generation).toBeGreaterThan(beta.generation)
  }, 60_000)
})
