/**
 * `termkeep serve` with TERMKEEP_FLEET_SECRET: its own sidecar is one host of a fleet, given only
 * the secret derived for it (not the fleet's, not the data directory's), and everything still
 * works through the API: health reaches it, a session lands on it without naming it, a terminal
 * runs and prints.
 */
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { deriveHostSecret } from '../../common/crypto.ts'
import { waitFor } from '../support/ports.ts'
import { startServe, type ServedStack } from '../support/serve.ts'

const FLEET_SECRET = `fleet-${Math.random().toString(36).slice(2)}-secret-xxxxxxxx`
let served: ServedStack

beforeAll(async () => {
  served = await startServe({ TERMKEEP_FLEET_SECRET: FLEET_SECRET })
}, 90_000)
afterAll(async () => {
  expect(await served?.stop()).toBe(0)
})

it('serves one host of a fleet: health, a session on it, a terminal that prints', async () => {
  const health = (await (await served.call('GET', '/v1/health')).json()) as any
  expect(health.sidecar.reachable, JSON.stringify(health)).toBe(true)
  const id = readFileSync(join(served.dataDir, 'host.id'), 'utf8').trim()
  const { hosts } = (await (await served.call('GET', '/v1/hosts')).json()) as any
  expect(hosts.map((h: any) => [h.id, h.up])).toEqual([[id, true]])

  const { session } = (await (await served.call('POST', '/v1/sessions', { cwd: served.dataDir })).json()) as any
  expect(session.host).toBe(id)
  const terminal = `/v1/sessions/${session.id}/terminals/t1`
  expect((await served.call('PUT', terminal, { cols: 80, rows: 24, command: 'echo fleet-ok; sleep 30' })).status).toBe(201)
  await waitFor(
    async () => {
      const page = (await (await served.call('GET', `${terminal}/output?after=0`)).json()) as any
      return page.items.some((i: any) => i.kind === 'data' && Buffer.from(i.data, 'base64').toString().includes('fleet-ok'))
    },
    15_000,
    'the output',
  )

  // The sidecar takes its host's derived secret, and neither the fleet's nor the data directory's.
  const sidecar = `http://127.0.0.1:${served.sidecarPort}${terminal}`
  const ask = async (secret: string) => (await fetch(sidecar, { headers: { authorization: `Bearer ${secret}` } })).status
  expect(await ask(await deriveHostSecret(FLEET_SECRET, id))).toBe(200)
  expect(await ask(FLEET_SECRET)).toBe(401)
  expect(await ask(readFileSync(join(served.dataDir, 'sidecar.secret'), 'utf8').trim())).toBe(401)
}, 60_000)
