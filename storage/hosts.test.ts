import { describe, expect, it } from 'vitest'
import { HOST_LEASE_MS } from '../schema/limits.ts'
import { hostFromRow } from './hosts.ts'

const host = {
  id: 'host_a',
  name: 'a',
  url: 'http://127.0.0.1:1',
  version: '0.1.0',
  cpus: 2,
  memoryBytes: 1024,
  secretEpoch: 2,
  registeredAt: 1,
  updatedAt: 1,
}
const now = 1_000_000

describe('hostFromRow: a host is up while its newest generation runs and beat within the lease', () => {
  it.each([
    ['beating', { generation: 3, heartbeatAt: now - HOST_LEASE_MS + 1, endedAt: null, starting: false }, true, null],
    ['claimed, not serving yet', { generation: 3, heartbeatAt: now, endedAt: null, starting: true }, false, null],
    [
      'heartbeat as old as the lease',
      { generation: 3, heartbeatAt: now - HOST_LEASE_MS, endedAt: null, starting: false },
      false,
      now - HOST_LEASE_MS,
    ],
    [
      'killed while starting',
      { generation: 3, heartbeatAt: now - HOST_LEASE_MS, endedAt: null, starting: true },
      false,
      now - HOST_LEASE_MS,
    ],
    ['stopped cleanly', { generation: 3, heartbeatAt: now - 5, endedAt: now - 1, starting: false }, false, now - 1],
    ['never started', { generation: null, heartbeatAt: null, endedAt: null, starting: null }, false, null],
  ])('%s', (_, generation, up, downSince) => {
    const shown = hostFromRow({ host, ...generation }, now)
    expect(shown.up).toBe(up)
    expect(shown.downSince).toBe(downSince)
    expect(shown.starting).toBe(generation.starting === true && generation.heartbeatAt === now)
    expect(shown).toMatchObject({
      id: 'host_a',
      capacity: { cpus: 2, memoryBytes: 1024 },
      generation: generation.generation,
      secretEpoch: 2,
    })
  })
})
