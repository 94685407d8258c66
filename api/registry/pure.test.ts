import { describe, expect, it } from 'vitest'
import type { Authority } from '../auth/guard.ts'
import * as v from 'valibot'
import { MAX_WORKSPACE_TITLE_CHARS } from '../../schema/limits.ts'
import { printable } from '../../schema/wire/common.ts'
import { WorkspaceTitle } from '../../schema/wire/registry.ts'
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
