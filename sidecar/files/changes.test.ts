/**
 * The change feed: termkeep's own writes in order, OS-observed edits, `ready` first, one shared
 * OS watcher per root. The route is driven in-process over a real libSQL file and real directories.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TermkeepError } from '../../schema/errors.ts'
import type { FileChange } from '../../schema/wire/files.ts'
import { sessions, workspaces, workspaceSessions } from '../../storage/tables.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'
import { readSse } from '../../test/smoke/sse.ts'
import { waitFor } from '../../test/support/ports.ts'
import { dedupe, FileChangeHub } from './changes.ts'
import { TreeWatch } from './tree-watch.ts'
import { fileRoutes } from './routes.ts'

let dir: string
let root: string
let storage: Storage

beforeAll(async () => {
  dir = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-changes-')))
  root = join(dir, 'ws')
  mkdirSync(join(root, 'nested'), { recursive: true })
  storage = await openStorage({ url: `file:${join(dir, 'db.sqlite')}` })
  await migrate(storage.client)
  await storage.db.insert(workspaces).values({ id: 'w', path: root, title: 'ws', position: 1 })
  await storage.db.insert(sessions).values({ id: 's', cwd: root })
  await storage.db.insert(workspaceSessions).values({ workspaceId: 'w', sessionId: 's', position: 1 })
})
/** The routes as the sidecar app mounts them (its onError answers typed errors). */
function sidecarApp(hub?: FileChangeHub): Hono {
  return new Hono()
    .onError((error, c) => {
      if (error instanceof TermkeepError) return c.json(error.toBody(), error.status)
      throw error
    })
    .route('/', fileRoutes({ storage, fileChanges: hub }))
}

afterAll(() => {
  storage?.close()
  rmSync(dir, { recursive: true, force: true })
})

describe('FileChangeHub', () => {
  it('reports termkeep writes in order, only to subscribers whose root holds the path', async () => {
    const hub = new FileChangeHub()
    const seen: FileChange[] = []
    const other: FileChange[] = []
    const a = await hub.subscribe(root, (c) => c.source === 'termkeep' && seen.push(c))
    const b = await hub.subscribe(join(dir, 'elsewhere'), (c) => other.push(c))
    try {
      writeFileSync(join(root, 'one.txt'), '1')
      hub.recordWrite(join(root, 'one.txt'))
      writeFileSync(join(root, 'nested', 'two.txt'), '2')
      hub.recordWrite(join(root, 'nested', 'two.txt'))
      rmSync(join(root, 'one.txt'))
      hub.recordWrite(join(root, 'one.txt'))
      hub.recordWrite(join(dir, 'outside.txt'))
      // Through a symlinked directory that leads out: never described.
      mkdirSync(join(dir, 'out-dir'), { recursive: true })
      symlinkSync(join(dir, 'out-dir'), join(root, 'escape'))
      writeFileSync(join(dir, 'out-dir', 'secret.txt'), 'outside')
      hub.recordWrite(join(root, 'escape', 'secret.txt'))
    } finally {
      a.close()
      b.close()
    }
    expect(seen.map((c) => [c.path, 'absent' in c ? 'absent' : 'version'])).toEqual([
      ['one.txt', 'version'],
      ['nested/two.txt', 'version'],
      ['one.txt', 'absent'],
    ])
    expect(other).toEqual([])
  })

  it('shares one OS watcher per root and releases it with the last subscriber', async () => {
    const hub = new FileChangeHub()
    const [first, second] = await Promise.all([hub.subscribe(root, () => undefined), hub.subscribe(root, () => undefined)])
    expect(first.os && second.os).toBe(true)
    expect(hub.watchedRoots).toBe(1)
    first.close()
    expect(hub.watchedRoots).toBe(1)
    second.close()
    expect(hub.watchedRoots).toBe(0)
  })

  it('reports a root the OS cannot watch as os:false, keeping the termkeep source', async () => {
    const hub = new FileChangeHub()
    const seen: FileChange[] = []
    const subscription = await hub.subscribe(join(dir, 'missing-root'), (c) => seen.push(c))
    expect(subscription.os).toBe(false)
    expect(subscription.reason).toMatch(/OS watcher/)
    expect(hub.watchedRoots).toBe(0)
    hub.recordWrite(join(dir, 'missing-root', 'x'))
    subscription.close()
    expect(seen).toEqual([{ path: 'x', absolutePath: join(dir, 'missing-root', 'x'), absent: true, source: 'termkeep' }])
  })

  it('dedupe drops only a repeat of the same observation for the same path', () => {
    const fresh = dedupe()
    const change = (path: string, version: string, source: 'os' | 'termkeep' = 'os'): FileChange => ({
      path,
      absolutePath: `/r/${path}`,
      version,
      source,
    })
    expect([change('a', '1'), change('a', '1'), change('b', '1'), change('a', '2'), change('a', '2', 'termkeep')].map(fresh)).toEqual([
      true,
      false,
      true,
      true,
      true,
    ])
  })
})

describe('TreeWatch', () => {
  it('watches new directories, forgets removed ones, skips .git and never follows a symlinked directory', async () => {
    const tree = join(dir, 'tree')
    mkdirSync(join(tree, 'a', 'b'), { recursive: true })
    mkdirSync(join(tree, '.git', 'objects'), { recursive: true })
    mkdirSync(join(dir, 'tree-outside'))
    symlinkSync(join(dir, 'tree-outside'), join(tree, 'link'))
    const seen: string[] = []
    const watch = await TreeWatch.start(tree, (path) => seen.push(path))
    try {
      expect(watch.directories).toBe(3) // tree, a, a/b
      expect(watch.truncated).toBe(false)
      writeFileSync(join(tree, 'a', 'b', 'deep.txt'), 'x')
      await waitFor(async () => seen.includes(join(tree, 'a', 'b', 'deep.txt')), 10_000, 'deep edit')
      mkdirSync(join(tree, 'fresh'))
      await waitFor(async () => watch.directories === 4, 10_000, 'new directory watched')
      writeFileSync(join(tree, 'fresh', 'new.txt'), 'x')
      await waitFor(async () => seen.includes(join(tree, 'fresh', 'new.txt')), 10_000, 'edit in a new directory')
      rmSync(join(tree, 'a'), { recursive: true })
      await waitFor(async () => watch.directories === 2, 10_000, 'removed directories forgotten')
      writeFileSync(join(dir, 'tree-outside', 'out.txt'), 'x')
      writeFileSync(join(tree, '.git', 'index'), 'x')
      writeFileSync(join(tree, 'sentinel'), 'x')
      await waitFor(async () => seen.includes(join(tree, 'sentinel')), 10_000, 'sentinel')
      expect(seen.filter((p) => p.includes('out.txt') || p.includes(`${join(tree, '.git')}/`))).toEqual([])
    } finally {
      watch.close()
    }
  })

  it('stops at the directory cap, shallowest first, and says so', async () => {
    const wide = join(dir, 'wide')
    for (const name of ['d1', 'd2', 'd3']) mkdirSync(join(wide, name, 'deeper'), { recursive: true })
    const watch = await TreeWatch.start(wide, () => undefined, 4)
    try {
      expect(watch.directories).toBe(4) // wide, d1, d2, d3 — not the deeper ones
      expect(watch.truncated).toBe(true)
    } finally {
      watch.close()
    }
    const hub = new FileChangeHub()
    expect(await hub.subscribe(wide, () => undefined).then((s) => (s.close(), s.reason))).toBeUndefined()
  })
})

describe('GET /v1/sessions/:sid/files/changes (sidecar route)', () => {
  it('sends ready first, then termkeep writes in order and OS-observed edits', async () => {
    const hub = new FileChangeHub()
    const app = sidecarApp(hub)
    const abort = new AbortController()
    const response = await app.request('/v1/sessions/s/files/changes', { signal: abort.signal })
    expect(response.status).toBe(200)
    const events = readSse(response)
    try {
      const ready = await events.next(10_000)
      expect(ready).toMatchObject({ event: 'ready' })
      expect(JSON.parse(ready.data)).toMatchObject({ root, os: true })
      // Once ready is out, the subscription is live: announce three writes synchronously.
      for (const name of ['w1.txt', 'w2.txt', 'w3.txt']) {
        writeFileSync(join(root, name), name)
        hub.recordWrite(join(root, name))
      }
      const termkeep: string[] = []
      const os = new Set<string>()
      while (termkeep.length < 3 || !os.has('w3.txt')) {
        const event = await events.next(10_000)
        expect(event.event).toBe('change')
        const change = JSON.parse(event.data) as FileChange
        if (change.source === 'termkeep') termkeep.push(change.path)
        else os.add(change.path)
      }
      expect(termkeep).toEqual(['w1.txt', 'w2.txt', 'w3.txt'])
      writeFileSync(join(root, 'nested', 'editor.txt'), 'typed in an editor')
      for (;;) {
        const change = JSON.parse((await events.next(10_000)).data) as FileChange
        if (change.path === 'nested/editor.txt') {
          expect(change).toMatchObject({ source: 'os', absolutePath: join(root, 'nested', 'editor.txt') })
          break
        }
      }
      // Edits behind a symlinked directory that leads out are never described.
      writeFileSync(join(dir, 'out-dir', 'later.txt'), 'outside edit')
      writeFileSync(join(root, 'sentinel.txt'), 'inside edit')
      const paths: string[] = []
      while (!paths.includes('sentinel.txt')) paths.push((JSON.parse((await events.next(10_000)).data) as FileChange).path)
      expect(paths.filter((p) => p.startsWith('escape/'))).toEqual([])
    } finally {
      abort.abort()
      await events.close().catch(() => undefined)
    }
    // The stream's end released the OS watcher.
    await waitFor(async () => hub.watchedRoots === 0, 10_000, 'watcher release')
  })

  it('refuses an unknown session and an unbound one before streaming', async () => {
    const app = sidecarApp()
    expect((await app.request('/v1/sessions/nope/files/changes')).status).toBe(404)
    await storage.db.insert(sessions).values({ id: 'loose', cwd: dir })
    const unbound = await app.request('/v1/sessions/loose/files/changes')
    expect(unbound.status).toBe(404)
    expect((await unbound.json()).error.code).toBe('workspace/not-found')
  })
})
