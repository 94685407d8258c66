import { describe, expect, it } from 'vitest'
import type { Authority } from '../auth/guard.ts'
import { defaultTitle } from './operations.ts'
import { scopeIncrement, scopeList } from './scope.ts'
import { moveBefore } from './store.ts'

describe('moveBefore', () => {
  it.each([
    [['a', 'b', 'c'], 'c', 'a', ['c', 'a', 'b']],
    [['a', 'b', 'c'], 'a', undefined, ['b', 'c', 'a']],
    [['a', 'b', 'c'], 'a', 'c', ['b', 'a', 'c']],
    [['a', 'b', 'c'], 'b', 'b', ['a', 'b', 'c']],
    [['a'], 'a', undefined, ['a']],
    [['a', 'b'], 'x', undefined, undefined],
    [['a', 'b'], 'a', 'x', undefined],
  ])('%j: %s before %s → %j', (ids, id, before, expected) => {
    expect(moveBefore(ids, id, before)).toEqual(expected)
  })
})

describe('defaultTitle', () => {
  it.each([
    ['/home/me/src/termkeep', 'termkeep'],
    ['/home/me/src/', 'src'],
    ['/', '/'],
    ['C:\\work\\proj', 'proj'],
  ])('%s → %s', (path, title) => expect(defaultTitle(path)).toBe(title))
})

describe('scope', () => {
  const scoped: Authority = { tokenId: 't', grants: new Set(), sessions: new Set(['mine']) }
  const all: Authority = { tokenId: 't', grants: new Set(), sessions: 'all' }
  const workspace = { id: 'w', path: '/p', title: 'p', sessionIds: ['theirs', 'mine'], createdAt: 1, updatedAt: 1 }

  it('keeps only in-scope session ids, everywhere they appear', () => {
    expect(scopeList(scoped, { workspaces: [workspace], archivedSessionIds: ['theirs', 'mine'] })).toEqual({
      workspaces: [{ ...workspace, sessionIds: ['mine'] }],
      archivedSessionIds: ['mine'],
    })
    expect(scopeIncrement(scoped, { kind: 'upsert', payload: { workspace } })).toEqual({
      kind: 'upsert',
      payload: { workspace: { ...workspace, sessionIds: ['mine'] } },
    })
    expect(scopeIncrement(scoped, { kind: 'archived', payload: { archivedSessionIds: ['theirs'] } }).payload).toEqual({ archivedSessionIds: [] })
    expect(scopeIncrement(scoped, { kind: 'order', payload: { workspaceIds: ['w'] } }).payload).toEqual({ workspaceIds: ['w'] })
  })

  it('leaves an all-sessions view untouched', () => {
    expect(scopeList(all, { workspaces: [workspace], archivedSessionIds: ['theirs'] }).workspaces[0]).toBe(workspace)
  })
})
