import { describe, expect, it } from 'vitest'
import type { Authority } from '../../storage/authority.ts'
import * as v from 'valibot'
import { MAX_WORKSPACE_TITLE_CHARS } from '../../schema/limits.ts'
import { printable } from '../../schema/wire/common.ts'
import { WorkspaceTitle } from '../../schema/wire/registry.ts'
import { defaultTitle } from './operations.ts'
import { mayRegister, RegistryView, scopeList, scopeOrder, seesWorkspace } from './scope.ts'
import { moveBefore } from '../../storage/registry/workspaces.ts'

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
    ['/tmp/evil\u001b]0;x\u0007', 'evil\ufffd]0;x\ufffd'],
    ['/tmp/\u200b', 'workspace'],
  ])('%s → %s', (path, title) => expect(defaultTitle(path)).toBe(title))

  it('stays within the title limit with its " (n)" suffix', () => {
    const long = `/tmp/${'d'.repeat(250)}`
    expect(defaultTitle(long)).toHaveLength(MAX_WORKSPACE_TITLE_CHARS)
    expect(defaultTitle(long, 12)).toHaveLength(MAX_WORKSPACE_TITLE_CHARS)
    expect(defaultTitle(long, 12).endsWith('d (12)')).toBe(true)
    expect(v.is(WorkspaceTitle, defaultTitle(long, 12))).toBe(true)
  })
})

describe('titles', () => {
  it.each([
    ['  build  ', 'build'],
    ['a\u0301', '\u00e1'],
    ['日本語', '日本語'],
    ['🙂'.repeat(200), '🙂'.repeat(200)],
  ])('%j is accepted as %j', (input, output) => expect(v.parse(WorkspaceTitle, input)).toBe(output))

  it.each(['', '   ', '\u200b', '\u200b\ufeff ', 'evil\u001b]0;PWNED\u0007', 'tab\there', '\u0085x', 'x'.repeat(201)])(
    '%j is refused',
    (input) => expect(v.is(WorkspaceTitle, input)).toBe(false),
  )

  it('shows control characters in printed text as escapes', () => {
    expect(printable('a\u001b[2Jb\u0007\u009b')).toBe('a\\x1b[2Jb\\x07\\x9b')
    expect(printable('plain — text')).toBe('plain — text')
  })
})

describe('scope', () => {
  const scoped: Authority = { tokenId: 't', grants: new Set(['workspaces:write']), sessions: new Set(['mine']) }
  const all: Authority = { tokenId: 't', grants: new Set(['workspaces:write']), sessions: 'all' }
  const workspace = { id: 'w', path: '/p', title: 'p', host: 'h1', sessionIds: ['theirs', 'mine'], createdAt: 1, updatedAt: 1 }
  const other = { id: 'o', path: '/o', title: 'o', host: 'h2', sessionIds: ['theirs'], createdAt: 1, updatedAt: 1 }
  const list = { workspaces: [other, workspace], archivedSessionIds: ['theirs', 'mine'] }

  it('shows a session-bound token only workspaces listing its sessions, and only its session ids', () => {
    expect(scopeList(scoped, list)).toEqual({ workspaces: [{ ...workspace, sessionIds: ['mine'] }], archivedSessionIds: ['mine'] })
    expect(seesWorkspace(scoped, other)).toBe(false)
    expect(seesWorkspace(scoped, workspace)).toBe(true)
  })

  it('lets only a token bound to all sessions with workspaces:write register a directory', () => {
    expect(mayRegister(all)).toBe(true)
    expect(mayRegister(scoped)).toBe(false)
    expect(mayRegister({ ...all, grants: new Set(['workspaces:read']) })).toBe(false)
  })

  it('watches as if the workspaces it cannot see did not exist', () => {
    const view = new RegistryView(scoped)
    expect(view.baseline(list).workspaces.map((w) => w.id)).toEqual(['w'])
    // Another workspace changes, is reordered, is removed; others archive their sessions: nothing.
    expect(view.next({ kind: 'upsert', payload: { workspace: { ...other, title: 'renamed' } } })).toBeUndefined()
    expect(view.next({ kind: 'order', payload: { workspaceIds: ['w', 'o'] } })).toBeUndefined()
    expect(view.next({ kind: 'remove', payload: { workspaceId: 'o' } })).toBeUndefined()
    expect(view.next({ kind: 'archived', payload: { archivedSessionIds: ['mine'] } })).toBeUndefined()
    // Its own workspace's changes arrive, scoped.
    expect(view.next({ kind: 'upsert', payload: { workspace: { ...workspace, title: 't2' } } })).toEqual({
      kind: 'upsert',
      payload: { workspace: { ...workspace, title: 't2', sessionIds: ['mine'] } },
    })
    expect(view.next({ kind: 'archived', payload: { archivedSessionIds: [] } })).toEqual({
      kind: 'archived',
      payload: { archivedSessionIds: [] },
    })
    // A workspace that comes to list its session appears; its place in the order follows.
    const joined = { ...other, id: 'n', sessionIds: ['mine'] }
    expect(view.next({ kind: 'upsert', payload: { workspace: joined } })?.kind).toBe('upsert')
    expect(view.next({ kind: 'order', payload: { workspaceIds: ['x', 'n', 'w'] } })).toEqual({
      kind: 'order',
      payload: { workspaceIds: ['n', 'w'] },
    })
    // One that stopped listing it is removed from the view; its removal then is not sent twice.
    expect(view.next({ kind: 'upsert', payload: { workspace: { ...joined, sessionIds: ['theirs'] } } })).toEqual({
      kind: 'remove',
      payload: { workspaceId: 'n' },
    })
    expect(view.next({ kind: 'remove', payload: { workspaceId: 'n' } })).toBeUndefined()
    expect(view.next({ kind: 'remove', payload: { workspaceId: 'w' } })).toEqual({ kind: 'remove', payload: { workspaceId: 'w' } })
  })

  it('says nothing of hidden sessions joining, moving in or leaving a workspace it sees', () => {
    const view = new RegistryView(scoped)
    view.baseline(list)
    // Only another token's session changed: the scoped workspace is the same but for updatedAt.
    const touched = { ...workspace, sessionIds: [...workspace.sessionIds, 'someone-else'], updatedAt: workspace.updatedAt + 1_000 }
    expect(view.next({ kind: 'upsert', payload: { workspace: touched } })).toBeUndefined()
    // A change it can see still arrives, with the newest updatedAt.
    expect(view.next({ kind: 'upsert', payload: { workspace: { ...touched, title: 't3' } } })).toMatchObject({
      kind: 'upsert',
      payload: { workspace: { title: 't3' } },
    })
  })

  it('leaves an all-sessions view untouched', () => {
    expect(scopeList(all, list).workspaces[1]).toBe(workspace)
    const view = new RegistryView(all)
    view.baseline(list)
    const increment = { kind: 'order' as const, payload: { workspaceIds: ['w', 'o'] } }
    expect(view.next(increment)).toBe(increment)
    expect(scopeOrder(all, ['a', 'b'], new Set())).toEqual(['a', 'b'])
  })
})
