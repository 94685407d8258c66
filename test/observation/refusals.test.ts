/**
 * What observation refuses, on a real terminal running the fake agent: handles from another
 * terminal or session, tampered ones, ones whose process exited or whose pid was reused, and
 * ones whose file is gone (404 `observe/handle-invalid`); undeclared variables (403); paths that
 * escape the home or a variable's root — by `..`, by an absolute path, by a symlink — and special
 * files (never content); bad input (typed 400s, never a 500). Plus the file facts, the bounded
 * JSON reads and watchDirectory.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { OBSERVE_MAX_WATCHERS_PER_TERMINAL } from '../../schema/limits.ts'
import { HandleCodec } from '../../sidecar/observation/handles.ts'
import { bindingOf } from '../../sidecar/observation/observed.ts'
import { waitFor } from '../support/ports.ts'
import { Observation, type EventStream } from './support.ts'

let o: Observation
let observer: string
let home: string
let sessions: string
/** The agent's journal directory under sessions/. */
let day: string
/** A directory outside the home, and what its file holds. */
let outside: string
const SECRET = `secret-${Math.random().toString(36).slice(2)}-never-returned`
const ALL = ['observe:process', 'observe:files', 'observe:journal']

beforeAll(async () => {
  o = await Observation.start('refusals')
  observer = await o.observer(ALL, ['FAKEAGENT_DATA', 'ROOTY'])
  await o.terminal('t1')
  await o.terminal('t2')
  home = await o.startAgent('t1', observer, 'r1', { env: 'ROOTY=/' })
  sessions = join(home, '.fakeagent', 'sessions')
  // Escape hatches planted in the agent's home, leading to a secret outside it.
  outside = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-outside-')))
  writeFileSync(join(outside, 'secret.txt'), SECRET)
  symlinkSync(outside, join(home, 'outside-link'))
  day = readdirSync(sessions)[0]
  symlinkSync(join(outside, 'secret.txt'), join(sessions, day, 'evil.jsonl'))
  execFileSync('mkfifo', [join(sessions, day, 'pipe.jsonl')])
  writeFileSync(join(home, 'state.json'), JSON.stringify({ ok: true }))
  writeFileSync(join(home, 'broken.json'), '{"ok": tru')
  writeFileSync(join(home, 'log.jsonl'), '{"n":1}\n\n{"n":2}\n{"n":3,"part')
}, 60_000)
afterAll(async () => {
  await o?.stop()
  if (outside) rmSync(outside, { recursive: true, force: true })
})

const files = (op: string, json: unknown, tid = 't1', token = observer) => o.observe(tid, `files/${op}`, token, json)
const homeFile = async (relativePath: string) => (await files('resolveHomeRelative', { relativePath })).body.handle

describe('handles', () => {
  it('are refused in another terminal, another session, and when tampered', async () => {
    const handle = await homeFile('state.json')
    expect((await files('stat', { handle })).body.stat).toMatchObject({ kind: 'file', size: 11 })
    const elsewhere = await files('stat', { handle }, 't2')
    expect([elsewhere.status, elsewhere.body.error.code]).toEqual([404, 'observe/handle-invalid'])

    const other = 'obs-refusals-other'
    await o.call('POST', '/v1/sessions', { json: { id: other, cwd: o.stack.workspaceDir } })
    await o.terminal('t1', other)
    const admin = o.stack.token // all sessions, all grants
    const foreign = await o.observe('t1', 'files/stat', admin, { handle }, other)
    expect([foreign.status, foreign.body.error.code]).toEqual([404, 'observe/handle-invalid'])

    const id: string = handle.id
    const flipped = id.slice(0, 20) + (id[20] === 'A' ? 'B' : 'A') + id.slice(21)
    for (const bad of [flipped, `${id}x`, id.replace('h1.f.', 'h1.d.'), 'garbage', 'h1.f.AAAA.BBBB']) {
      const answer = await files('stat', { handle: { id: bad } })
      expect([answer.status, answer.body.error.code], bad.slice(0, 30)).toEqual([404, 'observe/handle-invalid'])
    }
    // A directory handle is not a file handle, nor the other way round.
    const dir = (await files('resolveHomeDirectory', { relativePath: '.fakeagent' })).body.handle
    expect((await files('stat', { handle: dir })).status).toBe(404)
    const list = await files('listDirectory', { root: handle, extensions: ['.json'], maxDepth: 0, maxEntries: 1, maxBytes: 1 })
    expect(list.status).toBe(404)
  })

  it('are refused once their file is gone or replaced', async () => {
    writeFileSync(join(home, 'gone.json'), '{}')
    const handle = await homeFile('gone.json')
    rmSync(join(home, 'gone.json'))
    expect((await files('read', { handle, maxBytes: 10 })).body.error.code).toBe('observe/handle-invalid')
    writeFileSync(join(home, 'gone.json'), '{"new":1}') // the same name, another file (often the same inode)
    expect((await files('read', { handle, maxBytes: 10 })).status).toBe(404)
  })

  it('for a process are refused after it exits, and when another process has its pid', async () => {
    await o.terminal('t3')
    await o.type('t3', 'sleep 600\r')
    await o.foreground('t3', observer, 'sleep')
    const tree = (await o.observe('t3', 'processes/descendants', observer, {})).body.processes
    const sleep = tree.find((p: any) => p.executableName === 'sleep')
    const ok = await o.observe('t3', 'processes/openFiles', observer, { processes: [sleep.handle], access: 'readable' })
    expect(ok.status).toBe(200)

    // Same pid, another start time: what a reused pid looks like. Forged with the sidecar's own
    // keys (the test knows its secret), so only the identity check can refuse it.
    const codec = new HandleCodec(o.stack.sidecar.secret)
    const info = (await o.call('GET', o.terminalPath('t3'))).body
    const binding = bindingOf({ sessionId: o.sid, id: 't3', hostGeneration: info.hostGeneration, createdAt: info.createdAt })
    const stat = readFileSync(`/proc/${sleep.pid}/stat`, 'latin1')
    const startTicks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19])
    const genuine = codec.mint(binding, { kind: 'p', pid: sleep.pid, startTicks })
    expect(genuine.id).toBe(sleep.handle.id) // the forgery path is the real one
    const reused = codec.mint(binding, { kind: 'p', pid: sleep.pid, startTicks: startTicks + 1 })
    const refused = await o.observe('t3', 'processes/openFiles', observer, { processes: [reused], access: 'readable' })
    expect([refused.status, refused.body.error.code]).toEqual([404, 'observe/handle-invalid'])

    await o.type('t3', '\x03')
    await o.foreground('t3', observer, 'bash')
    const exited = await o.observe('t3', 'processes/openFiles', observer, { processes: [sleep.handle], access: 'readable' })
    expect([exited.status, exited.body.error.code]).toEqual([404, 'observe/handle-invalid'])
  })

  it('for a process are refused when a new process of the terminal really got its pid', async (context) => {
    // Forcing the next pid takes /proc/sys/kernel/ns_last_pid (root, or CAP_CHECKPOINT_RESTORE).
    if (!canForcePids()) return context.skip()
    await o.terminal('t5')
    await o.foreground('t5', observer, 'bash')
    await o.type('t5', 'sleep 601\r')
    const first = await pidOf('t5', '601')
    await o.type('t5', '\x03')
    await o.foreground('t5', observer, 'bash')
    let reused: any
    for (let attempt = 0; attempt < 30 && !reused; attempt++) {
      // Other processes of the machine may take the pid first: try again.
      writeFileSync('/proc/sys/kernel/ns_last_pid', String(first.pid - 1))
      await o.type('t5', 'sleep 602\r')
      const next = await pidOf('t5', '602')
      if (next.pid === first.pid) reused = next
      await o.type('t5', '\x03')
      await o.foreground('t5', observer, 'bash')
    }
    if (!reused) return context.skip()
    expect(reused.handle.id).not.toBe(first.handle.id)
    // (reused has exited again by now, so the new handle is refused too; the point is the old one.)
    expect(reused.pid).toBe(first.pid)
    const refused = await o.observe('t5', 'processes/openFiles', observer, { processes: [first.handle], access: 'readable' })
    expect([refused.status, refused.body.error.code]).toEqual([404, 'observe/handle-invalid'])
  })
})

async function pidOf(tid: string, argument: string): Promise<any> {
  return waitFor(
    async () => {
      const tree = (await o.observe(tid, 'processes/descendants', observer, {})).body.processes
      return tree.find((p: any) => p.executableName === 'sleep' && p.arguments?.[0] === argument)
    },
    10_000,
    `sleep ${argument}`,
  )
}

function canForcePids(): boolean {
  try {
    writeFileSync('/proc/sys/kernel/ns_last_pid', readFileSync('/proc/sys/kernel/ns_last_pid', 'latin1').trim())
    return true
  } catch {
    return false
  }
}

describe('environment variables', () => {
  it('are 403 unless declared on the token, for every operation that names one', async () => {
    const narrow = await o.observer(ALL, ['FAKEAGENT_DATA'])
    const handle = await homeFile('state.json')
    for (const [op, json] of [
      ['processes/environment', { names: ['ROOTY'] }],
      ['files/resolveDirectoryRelativeToEnvironment', { relativePath: 'sessions', environmentVariable: 'ROOTY' }],
      ['files/resolveRelativeToEnvironment', { relativePath: 'config.json', environmentVariable: 'PATH' }],
      ['files/resolvePathUnderEnvironment', { providerPath: `${home}/.fakeagent/config.json`, environmentVariable: 'HOME' }],
      ['files/environmentRelativePath', { handle, environmentVariable: 'HOME' }],
    ] as const) {
      const answer = await o.observe('t1', op, narrow, json)
      expect([answer.status, answer.body.error.code], op).toEqual([403, 'observe/undeclared'])
    }
  })

  it("root lookups beneath a declared variable's value, never at the filesystem root", async () => {
    const dir = await files('resolveDirectoryRelativeToEnvironment', { relativePath: 'sessions', environmentVariable: 'FAKEAGENT_DATA' })
    expect(dir.body.handle).not.toBeNull()
    const config = await files('resolveRelativeToEnvironment', {
      relativePath: 'config.json',
      environmentVariable: 'FAKEAGENT_DATA',
      extension: '.json',
    })
    expect(config.body.handle).not.toBeNull()
    const path = await files('environmentRelativePath', { handle: config.body.handle, environmentVariable: 'FAKEAGENT_DATA' })
    expect(path.body.path).toBe('config.json')
    const provider = await files('resolvePathUnderEnvironment', {
      providerPath: `${home}/.fakeagent/config.json`,
      environmentVariable: 'FAKEAGENT_DATA',
    })
    expect(provider.body.handle).toEqual(config.body.handle)
    // ROOTY=/ in the agent's environment: the whole filesystem is never a root.
    const rooty = await files('resolveRelativeToEnvironment', { relativePath: 'etc/hostname', environmentVariable: 'ROOTY' })
    expect(rooty.body.handle).toBeNull()
  })
})

describe('escapes', () => {
  it('are refused before anything is looked at when the path itself escapes (400)', async () => {
    for (const relativePath of ['../etc/passwd', 'a/../../x', '/etc/passwd', 'a\0b', '']) {
      for (const op of ['resolveHomeRelative', 'resolveHomeDirectory']) {
        const answer = await files(op, { relativePath })
        expect([answer.status, answer.body.error.code], `${op} ${JSON.stringify(relativePath)}`).toEqual([400, 'request/invalid'])
      }
    }
    const relative = await files('resolvePathUnderHome', { providerPath: 'etc/passwd', beneath: { homeRelative: '.fakeagent' } })
    expect(relative.status).toBe(400)
    const dotdot = await files('resolvePathUnderHome', { providerPath: `${home}/../etc/passwd`, beneath: { homeRelative: '.fakeagent' } })
    expect(dotdot.status).toBe(400)
  })

  it('answer null, never content, when a symlink leads out or a file is special', async () => {
    expect((await files('resolveHomeDirectory', { relativePath: 'outside-link' })).body).toEqual({ handle: null })
    expect((await files('resolveHomeRelative', { relativePath: 'outside-link/secret.txt' })).body).toEqual({ handle: null })
    expect((await files('resolveHomeRelative', { relativePath: `.fakeagent/sessions/${day}/evil.jsonl` })).body).toEqual({ handle: null })
    expect((await files('resolveHomeRelative', { relativePath: `.fakeagent/sessions/${day}/pipe.jsonl` })).body).toEqual({ handle: null })
    expect(
      (await files('resolvePathUnderHome', { providerPath: join(outside, 'secret.txt'), beneath: { homeRelative: '.fakeagent' } })).body,
    ).toEqual({ handle: null })
    const beneath = await files('resolveHomeRelative', { relativePath: 'state.json', beneath: { homeRelative: '.fakeagent' } })
    expect(beneath.body).toEqual({ handle: null })

    const root = (await files('resolveHomeDirectory', { relativePath: '.fakeagent/sessions' })).body.handle
    const listed = await files('listDirectory', { root, extensions: ['.jsonl'], maxDepth: 2, maxEntries: 100, maxBytes: 5_000_000 })
    expect(listed.body.entries.map((e: any) => e.relativePath)).toEqual([`${day}/r1.jsonl`])
    const text = JSON.stringify([listed.body])
    expect(text).not.toContain(SECRET)
  })
})

describe('bad input', () => {
  it('is a typed 400 (or 404 for a well-formed foreign handle), never a 500', async () => {
    const root = (await files('resolveHomeDirectory', { relativePath: '.fakeagent' })).body.handle
    const handle = await homeFile('state.json')
    const list = { root, extensions: ['.json'], maxDepth: 1, maxEntries: 10, maxBytes: 1000 }
    const cases: [string, unknown][] = [
      ['files/listDirectory', { ...list, extensions: undefined }],
      ['files/listDirectory', { ...list, extensions: [] }],
      ['files/listDirectory', { ...list, extensions: ['json'] }],
      ['files/listDirectory', { ...list, maxDepth: 9 }],
      ['files/listDirectory', { ...list, maxEntries: 0 }],
      ['files/listDirectory', { ...list, maxBytes: -1 }],
      ['files/read', { handle, maxBytes: -1 }],
      ['files/read', { handle, maxBytes: 1e12 }],
      ['files/read', { handle, maxBytes: 1.5 }],
      ['files/read', { handle, maxBytes: '10' }],
      ['files/read', { handle }],
      ['files/readJsonLine', { handle, maxBytes: 10, position: 'middle' }],
      ['files/read', { handle: 'h1.f.x.y', maxBytes: 10 }],
      ['files/read', { handle: { id: 42 }, maxBytes: 10 }],
      ['files/stat', {}],
      ['processes/environment', { names: [42] }],
      ['processes/environment', { names: ['lower'] }],
      ['processes/environment', { names: [] }],
      ['processes/environment', { names: 'FAKEAGENT_DATA' }],
      ['processes/openFiles', { processes: [handle] }],
      ['processes/openFiles', { processes: 'all', access: 'readable' }],
      ['files/resolveHomeRelative', { relativePath: 7 }],
      ['files/resolveHomeRelative', { relativePath: 'x', extension: 'json' }],
    ]
    for (const [op, json] of cases) {
      const answer = await o.observe('t1', op, observer, json)
      expect([answer.status, answer.body.error.code], `${op} ${JSON.stringify(json)}`).toEqual([400, 'request/invalid'])
    }
    const notJson = await o.call('POST', `${o.terminalPath('t1')}/observation/files/stat`, { token: observer, body: '{"handle":' })
    expect(notJson.status).toBe(400)
    const wrongKind = await o.observe('t1', 'processes/openFiles', observer, { processes: [handle], access: 'readable' })
    expect([wrongKind.status, wrongKind.body.error.code]).toEqual([404, 'observe/handle-invalid'])
    const follow = `${o.terminalPath('t1')}/observation/files/follow`
    for (const query of [`handle=${handle.id}&maxChunkBytes=-1`, `handle=${handle.id}&maxChunkBytes=1.5`, '', 'handle=']) {
      const answer = await o.call('GET', `${follow}?${query}`, { token: observer })
      expect([answer.status, answer.body.error.code], query).toEqual([400, 'request/invalid'])
    }
    const garbage = await o.call('GET', `${follow}?handle=garbage`, { token: observer })
    expect([garbage.status, garbage.body.error.code]).toEqual([404, 'observe/handle-invalid'])
    const watch = `${o.terminalPath('t1')}/observation/files/watchDirectory`
    for (const query of [
      `root=${root.id}&maxDepth=1&maxEntries=1&maxBytes=1`,
      `root=${root.id}&extensions=.json&maxDepth=99&maxEntries=1&maxBytes=1`,
    ]) {
      expect((await o.call('GET', `${watch}?${query}`, { token: observer })).status, query).toBe(400)
    }
  })

  it('on a terminal whose program exited is 409 observe/not-running', async () => {
    await o.terminal('t4')
    await o.foreground('t4', observer, 'bash')
    await o.type('t4', 'exit\r')
    await waitFor(async () => (await o.call('GET', o.terminalPath('t4'))).body.state === 'exited', 10_000, 't4 exited')
    const answer = await o.context('t4', observer)
    expect([answer.status, answer.body.error.code]).toEqual([409, 'observe/not-running'])
    expect((await o.call('GET', o.terminalPath('t4'))).body.foregroundCommand).toBeNull()
  })
})

describe('file facts and bounded reads', () => {
  it('stat, realpath, canonicalFile, homeRelativePath', async () => {
    const handle = await homeFile('state.json')
    const { stat } = (await files('stat', { handle })).body
    expect(stat).toMatchObject({ handle, kind: 'file', size: 11 })
    expect(Date.parse(stat.modifiedAt)).toBeGreaterThan(0)
    expect((await files('realpath', { handle })).body).toEqual({ handle })
    expect((await files('canonicalFile', { handle, extension: '.json' })).body).toEqual({ handle })
    expect((await files('canonicalFile', { handle, extension: '.jsonl' })).body).toEqual({ handle: null })
    expect((await files('canonicalFile', { handle, beneath: { homeRelative: '.fakeagent' } })).body).toEqual({ handle: null })
    const config = (await files('resolveHomeRelative', { relativePath: '.fakeagent/config.json' })).body.handle
    expect((await files('homeRelativePath', { handle: config, beneath: { homeRelative: '.fakeagent' } })).body).toEqual({
      path: 'config.json',
    })
    expect((await files('homeRelativePath', { handle, beneath: { homeRelative: '.fakeagent' } })).body).toEqual({ path: null })
    const viaHome = await files('resolvePathUnderHome', {
      providerPath: join(home, '.fakeagent', 'config.json'),
      beneath: { homeRelative: '.fakeagent' },
      extension: '.json',
    })
    expect(viaHome.body).toEqual({ handle: config })
  })

  it('read, readJson and readJsonLine stay within maxBytes; invalid JSON is null', async () => {
    const state = await homeFile('state.json')
    const first = await files('read', { handle: state, maxBytes: 4 })
    expect([Buffer.from(first.body.data, 'base64').toString(), first.body.size, first.body.truncated]).toEqual(['{"ok', 11, true])
    expect((await files('readJson', { handle: state, maxBytes: 100 })).body).toEqual({ value: { ok: true } })
    expect((await files('readJson', { handle: state, maxBytes: 5 })).body).toEqual({ value: null })
    expect((await files('readJson', { handle: await homeFile('broken.json'), maxBytes: 100 })).body).toEqual({ value: null })
    const log = await homeFile('log.jsonl')
    expect((await files('readJsonLine', { handle: log, maxBytes: 100, position: 'first' })).body).toEqual({ value: { n: 1 } })
    // The last line is still being written: the last complete record.
    expect((await files('readJsonLine', { handle: log, maxBytes: 100, position: 'last' })).body).toEqual({ value: { n: 2 } })
    // A window that starts inside a line skips that fragment; one holding no complete record is null.
    expect((await files('readJsonLine', { handle: log, maxBytes: 24, position: 'last' })).body).toEqual({ value: { n: 2 } })
    expect((await files('readJsonLine', { handle: log, maxBytes: 20, position: 'last' })).body).toEqual({ value: null })
  })
})

describe('watchDirectory', () => {
  let stream: EventStream
  it('sends the current snapshot, then one after each change', async () => {
    const root = (await files('resolveHomeDirectory', { relativePath: 'watched' }).then((a) => a.body.handle)) ?? null
    expect(root).toBeNull() // not there yet
    mkdirSync(join(home, 'watched', 'deep'), { recursive: true })
    const dir = (await files('resolveHomeDirectory', { relativePath: 'watched' })).body.handle
    const query = `root=${encodeURIComponent(dir.id)}&extensions=.jsonl&maxDepth=1&maxEntries=10&maxBytes=100000`
    stream = await o.stream(`${o.terminalPath('t1')}/observation/files/watchDirectory?${query}`, observer)
    expect((await stream.next())!).toEqual({ event: 'snapshot', data: { entries: [], truncated: false } })
    writeFileSync(join(home, 'watched', 'deep', 'a.jsonl'), '{}\n')
    const second = await stream.next()
    expect(second!.data.entries.map((e: any) => e.relativePath)).toEqual(['deep/a.jsonl'])
    writeFileSync(join(home, 'watched', 'ignored.txt'), 'x')
    writeFileSync(join(home, 'watched', 'b.jsonl'), '{}\n')
    const third = await stream.next()
    expect(third!.data.entries.map((e: any) => e.relativePath)).toEqual(['deep/a.jsonl', 'b.jsonl'])
    stream.close()
  })

  it(`allows at most ${OBSERVE_MAX_WATCHERS_PER_TERMINAL} watchers per terminal`, async () => {
    const handle = await homeFile('state.json')
    const path = `${o.terminalPath('t1')}/observation/files/follow?handle=${encodeURIComponent(handle.id)}`
    const open: EventStream[] = []
    await waitFor(
      async () => {
        // The stream closed just before may still hold its slot for a moment.
        try {
          while (open.length < OBSERVE_MAX_WATCHERS_PER_TERMINAL) open.push(await o.stream(path, observer))
          return true
        } catch {
          return false
        }
      },
      10_000,
      'every slot',
    )
    const refused = await o.call('GET', path, { token: observer })
    expect([refused.status, refused.body.error.code]).toEqual([409, 'observe/limit-reached'])
    for (const s of open) s.close()
    await waitFor(
      async () =>
        await o
          .stream(path, observer)
          .then((s) => (s.close(), true))
          .catch(() => false),
      10_000,
      'a slot freed',
    )
    expect(existsSync(home)).toBe(true)
  })
})
