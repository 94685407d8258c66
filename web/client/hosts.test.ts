import { describe, expect, it } from 'vitest'
import type { Host } from '../../schema/wire/hosts.ts'
import { sameHosts } from './hosts.ts'

const host = (id: string, patch: Partial<Host> = {}) => ({ id, name: id, up: true, heartbeatAt: 1, downSince: null, ...patch }) as Host

describe('sameHosts: what makes the page draw the hosts again', () => {
  it('ignores a heartbeat, and sees a host going down, one joining and one renamed', () => {
    expect(sameHosts([host('a')], [host('a', { heartbeatAt: 2 })])).toBe(true)
    expect(sameHosts([host('a')], [host('a', { up: false, downSince: 5 })])).toBe(false)
    expect(sameHosts([host('a')], [host('a'), host('b')])).toBe(false)
    expect(sameHosts([host('a')], [host('a', { name: 'desk' })])).toBe(false)
  })
})
