import { describe, expect, it } from 'vitest'
import type { Host } from '../../schema/wire/hosts.ts'
import { HostsView } from './changes.ts'

const host = (id: string, patch: Partial<Host> = {}): Host => ({
  id,
  name: id,
  url: `http://127.0.0.1/${id}`,
  version: '0.1.0',
  capacity: { cpus: 2, memoryBytes: 1024 },
  up: true,
  starting: false,
  downSince: null,
  generation: 1,
  heartbeatAt: 100,
  secretEpoch: 0,
  registeredAt: 1,
  ...patch,
})

describe('HostsView: what a hosts watch tells after its baseline', () => {
  it('tells a join, a liveness flip either way, another change and a removal; a heartbeat alone is nothing', () => {
    const view = new HostsView()
    expect(view.baseline([host('a')])).toEqual([host('a')])
    expect(view.next([host('a', { heartbeatAt: 110 })])).toEqual([])
    const changes = (hosts: Host[]) =>
      view.next(hosts).map((i) => (i.kind === 'upsert' ? [i.payload.host.id, i.payload.change] : ['-', i.payload.hostId]))
    expect(changes([host('a'), host('b')])).toEqual([['b', 'joined']])
    expect(changes([host('a', { up: false, downSince: 120 }), host('b')])).toEqual([['a', 'down']])
    expect(changes([host('a', { up: false, starting: true, generation: 2 }), host('b')])).toEqual([['a', 'changed']])
    expect(changes([host('a', { generation: 2 }), host('b', { url: 'http://elsewhere' })])).toEqual([
      ['a', 'up'],
      ['b', 'changed'],
    ])
    expect(changes([host('b', { url: 'http://elsewhere', heartbeatAt: 500 })])).toEqual([['-', 'a']])
  })
})
