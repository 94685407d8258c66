/** The page's registry reducer over the watch events of schema/wire/registry.ts. */
import { describe, expect, it } from 'vitest'
import { applyRegistryEvent, EMPTY_REGISTRY } from './registry.ts'

const ws = (id: string, sessionIds: string[] = []) => ({ id, path: `/p/${id}`, title: id, sessionIds, createdAt: 1, updatedAt: 1 })

describe('applyRegistryEvent', () => {
  it('applies baseline, upsert, order, remove and archived in sequence', () => {
    let state = applyRegistryEvent(EMPTY_REGISTRY, 'baseline', { workspaces: [ws('a'), ws('b')], archivedSessionIds: [] })
    expect(state.workspaces.map((w) => w.id)).toEqual(['a', 'b'])
    state = applyRegistryEvent(state, 'upsert', { workspace: ws('c') })
    expect(state.workspaces.map((w) => w.id)).toEqual(['c', 'a', 'b'])
    state = applyRegistryEvent(state, 'upsert', { workspace: ws('a', ['s1', 's2']) })
    expect(state.workspaces.find((w) => w.id === 'a')?.sessionIds).toEqual(['s1', 's2'])
    state = applyRegistryEvent(state, 'order', { workspaceIds: ['b', 'a', 'c'] })
    expect(state.workspaces.map((w) => w.id)).toEqual(['b', 'a', 'c'])
    state = applyRegistryEvent(state, 'remove', { workspaceId: 'a' })
    expect(state.workspaces.map((w) => w.id)).toEqual(['b', 'c'])
    state = applyRegistryEvent(state, 'archived', { archivedSessionIds: ['s1'] })
    expect(state.archivedSessionIds).toEqual(['s1'])
  })

  it('leaves the state alone for unknown events', () => {
    const state = applyRegistryEvent(EMPTY_REGISTRY, 'baseline', { workspaces: [ws('a')], archivedSessionIds: [] })
    expect(applyRegistryEvent(state, 'mystery', {})).toBe(state)
  })
})
