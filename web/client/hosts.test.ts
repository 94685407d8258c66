import { describe, expect, it } from 'vitest'
import type { Host } from '../../schema/wire/hosts.ts'
import { applyHostEvent } from './hosts.ts'

const host = (id: string, up = true) => ({ id, name: id, up }) as Host

describe('applyHostEvent', () => {
  it('replaces on a baseline, updates in place, appends a new host and drops a removed one', () => {
    let hosts = applyHostEvent([host('x')], 'baseline', { hosts: [host('a'), host('b')] })
    expect(hosts.map((h) => h.id)).toEqual(['a', 'b'])
    hosts = applyHostEvent(hosts, 'upsert', { host: host('a', false), change: 'down' })
    expect(hosts.map((h) => [h.id, h.up])).toEqual([
      ['a', false],
      ['b', true],
    ])
    hosts = applyHostEvent(hosts, 'upsert', { host: host('c'), change: 'joined' })
    hosts = applyHostEvent(hosts, 'remove', { hostId: 'b' })
    expect(hosts.map((h) => h.id)).toEqual(['a', 'c'])
    expect(applyHostEvent(hosts, 'unknown', {})).toEqual(hosts)
  })
})
