/**
 * termkeep's own state is never reachable through a file route (sidecar/files/own-state.ts), on a
 * real stack whose data directory lies inside the observed home — as `./data` under a checkout in
 * `$HOME` does: HOME/work/tkdata holds the database, the spool's journals and the sidecar secret.
 * Through every observation files route (and one MCP tool) and the workspace files/ routes, the
 * secret, the database, a journal, hard links of them elsewhere in HOME and a symlinked directory
 * to the data directory answer exactly as absent paths do, and never return a byte of them;
 * ordinary files beside them still work. Also: the home itself is not a directory root.
 */
import { linkSync, mkdirSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { callTool, factsOf, mcpClient } from '../support/mcp.ts'
import { waitFor } from '../support/ports.ts'
import { Observation } from './support.ts'

let o: Observation
let observer: string
let home: string
let dataDir: string
let journal: string
let mcp: Client | undefined
const SECRET = `sc-own-state-${Math.random().toString(36).slice(2)}-never-returned`
const OK = '{"ordinary":true}\n'
/** Every suffix own state has, so a listing would show it if it were not left out. */
const EXTENSIONS = ['.jsonl', '.journal', '.db', '.secret', '.db-wal', '.db-shm', '.json']
const LIMITS = { extensions: EXTENSIONS, maxDepth: 8, maxEntries: 256, maxBytes: 16_000_000 }

/** Every regular file under `dir`, as paths relative to it. */
function walk(dir: string, base = dir): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    return entry.isDirectory() ? walk(path, base) : entry.isFile() ? [relative(base, path)] : []
  })
}

beforeAll(async () => {
  o = await Observation.start('own-state', {}, 'home/work/tkdata')
  dataDir = o.stack.sidecar.dataDir
  home = dirname(dirname(dataDir))
  // `termkeep serve` keeps the secret here (cli/serve.ts); the test sidecar got it by environment.
  writeFileSync(join(dataDir, 'sidecar.secret'), `${SECRET}\n`, { mode: 0o600 })
  observer = await o.observer(['observe:process', 'observe:files', 'observe:journal'], ['WHOLEHOME'])
  await o.terminal('t1')
  journal = walk(dataDir).find((path) => path.endsWith('.journal'))!
  // The agent keeps its own data inside the data directory, so it holds termkeep's files open.
  await o.startAgent('t1', observer, 'own', { home, env: `FAKEAGENT_DATA=${dataDir}/agent WHOLEHOME=${home}` })
  writeFileSync(join(home, 'work', 'ok.jsonl'), OK)
  writeFileSync(join(home, 'work', 'plain.txt'), 'plain')
  // Elsewhere in HOME: hard links of the secret, the database and a journal; symlinks to the data dir.
  const stash = join(home, 'stash')
  mkdirSync(stash)
  writeFileSync(join(stash, 'ok.jsonl'), OK)
  linkSync(join(dataDir, 'sidecar.secret'), join(stash, 'secret.jsonl'))
  linkSync(join(dataDir, 'termkeep.db'), join(stash, 'db.jsonl'))
  linkSync(join(dataDir, journal), join(stash, 'journal.jsonl'))
  symlinkSync(dataDir, join(home, 'tk'))
  symlinkSync(dataDir, join(stash, 'tk'))
}, 90_000)

afterAll(async () => {
  await mcp?.close().catch(() => {})
  await o?.stop()
})

const files = (op: string, json: unknown) => o.observe('t1', `files/${op}`, observer, json)
const homeFile = (relativePath: string) => files('resolveHomeRelative', { relativePath })
const homeDirectory = (relativePath: string) => files('resolveHomeDirectory', { relativePath })

/** Paths to termkeep's own files, every way the home reaches them. */
const ownPaths = () => [
  'work/tkdata/sidecar.secret',
  'work/tkdata/termkeep.db',
  `work/tkdata/${journal}`,
  'work/tkdata/agent/config.json',
  'tk/sidecar.secret',
  `tk/${journal}`,
  'stash/secret.jsonl',
  'stash/db.jsonl',
  'stash/journal.jsonl',
  'stash/tk/termkeep.db',
]

describe('observation files routes', () => {
  it('resolve termkeep’s own files exactly as absent ones: null', async () => {
    const absent = await homeFile('work/no-such-file.jsonl')
    expect(absent).toEqual({ status: 200, body: { handle: null } })
    for (const path of ownPaths()) expect(await homeFile(path), path).toEqual(absent)
    for (const providerPath of [join(dataDir, 'sidecar.secret'), join(home, 'tk', 'termkeep.db'), join(home, 'stash', 'secret.jsonl')]) {
      expect(await files('resolvePathUnderHome', { providerPath, beneath: { homeRelative: 'work' } }), providerPath).toEqual(absent)
      expect(await files('resolvePathUnderHome', { providerPath, beneath: { homeRelative: 'stash' } }), providerPath).toEqual(absent)
    }
    for (const dir of ['work/tkdata', 'work/tkdata/spool', 'tk', 'stash/tk', 'work/tkdata/agent']) {
      expect(await homeDirectory(dir), dir).toEqual(absent)
    }
  })

  it('still resolve, stat and read the ordinary files beside them', async () => {
    const { handle } = (await homeFile('work/ok.jsonl')).body
    expect(handle).not.toBeNull()
    const read = await files('read', { handle, maxBytes: 1000 })
    expect(Buffer.from(read.body.data, 'base64').toString()).toBe(OK)
    expect((await files('stat', { handle })).body.stat).toMatchObject({ kind: 'file', size: OK.length })
    expect((await files('readJsonLine', { handle, maxBytes: 1000, position: 'last' })).body.value).toEqual({ ordinary: true })
    expect((await homeFile('stash/ok.jsonl')).body.handle).not.toBeNull()
  })

  it('list a directory holding the data directory, or links to it, without any of it', async () => {
    for (const dir of ['work', 'stash']) {
      const { handle: root } = (await homeDirectory(dir)).body
      expect(root, dir).not.toBeNull()
      const listing = await files('listDirectory', { root, ...LIMITS })
      expect(listing.status).toBe(200)
      expect(
        listing.body.entries.map((e: any) => e.relativePath),
        dir,
      ).toEqual(['ok.jsonl'])
    }
  })

  it('watch a directory holding the data directory without seeing it, and a change beside it still arrives', async () => {
    const { handle: root } = (await homeDirectory('work')).body
    const query = new URLSearchParams({
      root: root.id,
      extensions: EXTENSIONS.join(','),
      maxDepth: '8',
      maxEntries: '256',
      maxBytes: '16000000',
    })
    const stream = await o.stream(`${o.terminalPath('t1')}/observation/files/watchDirectory?${query}`, observer)
    const first = await stream.next()
    expect(first?.data.entries.map((e: any) => e.relativePath)).toEqual(['ok.jsonl'])
    writeFileSync(join(home, 'work', 'later.jsonl'), OK)
    const next = await stream.next()
    expect(next?.data.entries.map((e: any) => e.relativePath).sort()).toEqual(['later.jsonl', 'ok.jsonl'])
    stream.close()
  })

  it('follow never opens termkeep’s files: a path rotated onto a hard link of the secret is waited out', async () => {
    const path = join(home, 'stash', 'rotating.jsonl')
    writeFileSync(path, 'first\n')
    const { handle } = (await homeFile('stash/rotating.jsonl')).body
    const stream = await o.stream(`${o.terminalPath('t1')}/observation/files/follow?handle=${encodeURIComponent(handle.id)}`, observer)
    expect(Buffer.from((await stream.next())!.data.bytes, 'base64').toString()).toBe('first\n')
    rmSync(path)
    linkSync(join(dataDir, 'sidecar.secret'), path)
    // Then an ordinary file takes the name: the first thing the follower tells is that one.
    await new Promise((resolve) => setTimeout(resolve, 300))
    writeFileSync(`${path}.tmp`, 'second\n')
    renameSync(`${path}.tmp`, path)
    const replaced = (await stream.next())!
    expect(replaced.event).toBe('replace')
    expect(Buffer.from(replaced.data.bytes, 'base64').toString()).toBe('second\n')
    stream.close()
  })

  it('openFiles leaves out the files termkeep’s data directory holds, though the agent has them open', async () => {
    const { processes } = (await o.observe('t1', 'processes/descendants', observer, {})).body
    const agent = processes.find((p: any) => p.executableName === 'node')
    const held = readdirSync(`/proc/${agent.pid}/fd`).map((fd) => {
      try {
        return readlinkSync(`/proc/${agent.pid}/fd/${fd}`)
      } catch {
        return ''
      }
    })
    expect(held).toContain(join(dataDir, 'agent', 'config.json')) // it really holds them
    for (const access of ['readable', 'writable']) {
      const open = await o.observe('t1', 'processes/openFiles', observer, { processes: [agent.handle], access })
      expect(open.status).toBe(200)
      expect(open.body.files, access).toEqual([])
    }
  })

  it('refuse the whole home as a directory root', async () => {
    for (const relativePath of ['.', './', './.']) {
      const answer = await homeDirectory(relativePath)
      expect(answer.status, relativePath).toBe(400)
      expect(answer.body.error.code).toBe('request/invalid')
    }
    // A declared variable naming the home is not a way round it.
    const viaVariable = await files('resolveDirectoryRelativeToEnvironment', { relativePath: '.', environmentVariable: 'WHOLEHOME' })
    expect(viaVariable).toEqual({ status: 200, body: { handle: null } })
    const below = await files('resolveDirectoryRelativeToEnvironment', { relativePath: 'work', environmentVariable: 'WHOLEHOME' })
    expect(below.body.handle).not.toBeNull()
  })

  it('a hard link to a live journal keeps no byte of it once its terminal closes (the journal is emptied, then unlinked)', async () => {
    const marker = `closed-journal-${Math.random().toString(36).slice(2)}`
    await o.terminal('t-linked')
    await o.type('t-linked', `echo ${marker}\r`)
    const spoolFile = await waitFor(
      async () =>
        walk(dataDir).find((path) => path.endsWith('t-linked.journal') && readFileSync(join(dataDir, path), 'utf8').includes(marker)),
      10_000,
      'the marker in the journal',
    )
    const link = join(home, 'stash', 'closed-journal.jsonl')
    linkSync(join(dataDir, spoolFile), link)
    expect((await homeFile('stash/closed-journal.jsonl')).body.handle).toBeNull() // termkeep's while it lives
    const closed = await o.call('DELETE', o.terminalPath('t-linked'))
    expect(closed.status).toBe(200)
    // Its follower lets go of the spool just after the close answered.
    await waitFor(async () => !walk(dataDir).includes(spoolFile), 10_000, 'the journal unlinked')
    // Now an ordinary file of the user's, and an empty one: no route gives a byte of the output.
    const { handle } = (await homeFile('stash/closed-journal.jsonl')).body
    if (handle !== null) {
      const read = await files('read', { handle, maxBytes: 100_000 })
      expect(Buffer.from(read.body.data ?? '', 'base64').toString()).not.toContain(marker)
      expect((await files('stat', { handle })).body.stat.size).toBe(0)
    }
    expect(readFileSync(link)).toHaveLength(0)
  })

  it('the MCP tools (which call the same routes) resolve the secret as absent too', async () => {
    mcp = await mcpClient(o.stack.api.url, observer)
    const args = { sid: o.sid, tid: 't1' }
    expect(factsOf(await callTool(mcp, 'observe_resolve_home_relative', { ...args, relativePath: 'tk/sidecar.secret' }))).toEqual({
      handle: null,
    })
    expect(factsOf(await callTool(mcp, 'observe_resolve_home_relative', { ...args, relativePath: 'work/ok.jsonl' })).handle).not.toBeNull()
  })
})

describe('workspace files/ routes, on a workspace holding the data directory', () => {
  const sid = 'ws-own'
  beforeAll(async () => {
    const made = await o.call('POST', '/v1/workspaces', { json: { path: join(home, 'work') } })
    expect(made.status, JSON.stringify(made.body)).toBeLessThan(300)
    const session = await o.call('POST', '/v1/sessions', { json: { id: sid, cwd: join(home, 'work') } })
    expect(session.status, JSON.stringify(session.body)).toBeLessThan(300)
  })
  const get = (op: string, path: string) => o.call('GET', `/v1/sessions/${sid}/files/${op}?path=${encodeURIComponent(path)}`)

  it('answer 404 files/not-found for termkeep’s own files, as for absent ones, and never their bytes', async () => {
    const absent = await get('text', 'no-such-file')
    expect(absent.status).toBe(404)
    expect(absent.body.error.code).toBe('files/not-found')
    const relativeToWork = [
      'tkdata/sidecar.secret',
      'tkdata/termkeep.db',
      `tkdata/${journal}`,
      '../tk/sidecar.secret',
      '../stash/secret.jsonl',
      join(dataDir, 'sidecar.secret'),
    ]
    for (const path of relativeToWork) {
      for (const op of ['text', 'bytes', 'all', 'stat']) {
        const answer = await get(op, path)
        expect(JSON.stringify(answer.body), `${op} ${path}`).not.toContain(SECRET)
        // Inside the workspace: not found; outside it (a link elsewhere in HOME): outside, as before.
        expect(answer.status, `${op} ${path}`).toBeGreaterThanOrEqual(400)
        if (path.startsWith('tkdata/')) expect(answer.body.error.code, `${op} ${path}`).toBe('files/not-found')
      }
    }
    expect((await get('list', 'tkdata')).body.error.code).toBe('files/not-found')
    expect((await get('text', 'plain.txt')).body.text).toBe('plain')
  })

  it('list the workspace without the data directory', async () => {
    const listing = await get('list', '')
    expect(listing.status).toBe(200)
    const names = listing.body.entries.map((e: any) => e.name)
    expect(names).toEqual(expect.arrayContaining(['ok.jsonl', 'plain.txt']))
    expect(names).not.toContain('tkdata')
  })

  it('a hard link of the secret inside the workspace is not found either', async () => {
    linkSync(join(dataDir, 'sidecar.secret'), join(home, 'work', 'copy.txt'))
    try {
      const answer = await get('text', 'copy.txt')
      expect(answer.status).toBe(404)
      expect(answer.body.error.code).toBe('files/not-found')
      expect((await get('list', '')).body.entries.map((e: any) => e.name)).not.toContain('copy.txt')
    } finally {
      rmSync(join(home, 'work', 'copy.txt'))
    }
  })
})
