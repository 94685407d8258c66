/**
 * The keeper through the real `termkeep serve` (what `npm start` runs):
 * - Ctrl-C (SIGINT to serve's process group, as a shell sends it) with `vim` and `sleep 600`
 *   running, then serve again: both programs are the same processes, alive; vim redraws on attach
 *   (its unsaved edit still on screen); `termkeep ps` still shows the sleep.
 * - an upgrade: serve stopped, then started from another build (a copy of the tree with another
 *   version string): the keeper of the first build keeps the program alive, and the new sidecar
 *   adopts it.
 */
import { spawnSync } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { LAYERS } from './layering/layers.ts'
import { stopKeeper } from './support/keepers.ts'
import { freePort, waitFor } from './support/ports.ts'
import { alive, serve, type Served } from './support/serve.ts'
import { SidecarHttp } from './support/terminals.ts'
import { UNSET_CONFIG } from './smoke/targets.ts'

const ROOT = new URL('..', import.meta.url).pathname
const BIN = join(ROOT, 'cli/bin.js')
const TOKEN = 'tk_keeper_serve_test_0123456789abcdef'
const VIM = spawnSync('sh', ['-c', 'command -v vim']).status === 0 ? 'vim' : 'vi'
const work = mkdtempSync(join(tmpdir(), 'termkeep-keeper-serve-'))
const cleanup: Array<() => Promise<void> | void> = []
afterAll(async () => {
  for (const step of cleanup.reverse()) await step()
  rmSync(work, { recursive: true, force: true })
})

interface Stack {
  env: Record<string, string>
  url: string
  call(method: string, path: string, body?: unknown, headers?: Record<string, string>): Promise<Response>
}

async function stackEnv(name: string): Promise<Stack> {
  const dataDir = join(work, name)
  mkdirSync(dataDir, { mode: 0o700 })
  const port = await freePort()
  let sidecarPort = await freePort()
  while (sidecarPort === port) sidecarPort = await freePort()
  const env = {
    TERMKEEP_DATA_DIR: dataDir,
    PORT: String(port),
    SIDECAR_URL: `http://127.0.0.1:${sidecarPort}`,
    TERMKEEP_ADMIN_TOKEN: TOKEN,
    HOME: work,
  }
  cleanup.push(() => stopKeeper(dataDir))
  const url = `http://127.0.0.1:${port}`
  return {
    env,
    url,
    call: (method, path, body, headers = {}) =>
      fetch(`${url}${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
        body: typeof body === 'string' ? body : body === undefined ? undefined : JSON.stringify(body),
      }),
  }
}

/** The top folders of every layer that ships (the layer table's, so a new layer is copied too). */
function shippedFolders(): string[] {
  const rows = Object.entries(LAYERS).filter(([name]) => name !== 'tooling')
  const folders = rows.flatMap(([, layer]) => layer.paths.filter((path) => path.includes('/')).map((path) => path.split('/')[0]!))
  return [...new Set(folders)]
}

/** Serve started and its API up. */
async function up(stack: Stack, main = BIN): Promise<Served> {
  const served = serve(stack.env, { detached: true, main })
  cleanup.push(() => void served.child.kill('SIGKILL'))
  await waitFor(async () => served.output().includes('termkeep: web page at'), 60_000, 'serve to start').catch((error: Error) => {
    throw new Error(`${error.message}; serve printed:\n${served.output()}`)
  })
  return served
}

/** `promise`, or an error naming `what` after 30 s (a test that hangs says where). */
function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), 30_000)))
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/** Ctrl-C in the shell that runs serve: SIGINT to its whole process group. */
async function ctrlC(served: Served): Promise<number | null> {
  process.kill(-served.child.pid!, 'SIGINT')
  return served.exited
}

/** The pid of the process named `comm` among terminal `tid`'s (found by its marks). */
function pidOf(tid: string, comm: string): number | undefined {
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() !== comm) continue
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(`TERMKEEP_TERMINAL_ID=${tid}`)) return Number(entry)
    } catch {
      // gone
    }
  }
  return undefined
}

async function screenText(stack: Stack, tid: string): Promise<string> {
  const body = (await (await stack.call('GET', `/v1/sessions/s/terminals/${tid}/screen`)).json()) as { lines?: string[]; text?: string }
  return JSON.stringify(body)
}

describe('the keeper under termkeep serve', () => {
  it(`Ctrl-C, then serve again: ${VIM} and sleep 600 are the same processes, ${VIM} redraws on attach, termkeep ps shows the sleep`, async () => {
    if (VIM !== 'vim') console.warn('keeper-serve.test.ts: vim is not installed; using vi')
    const stack = await stackEnv('ctrl-c')
    writeFileSync(join(work, 'notes.txt'), 'kept by the keeper\n')
    const first = await up(stack)
    expect((await stack.call('POST', '/v1/sessions', { id: 's', cwd: work })).status).toBe(201)
    expect(
      (await stack.call('PUT', '/v1/sessions/s/terminals/editor', { cols: 80, rows: 24, command: `${VIM} -u NONE -N notes.txt` })).status,
    ).toBe(201)
    expect((await stack.call('PUT', '/v1/sessions/s/terminals/sleeper', { cols: 80, rows: 24, command: 'sleep 600' })).status).toBe(201)
    await waitFor(async () => (await screenText(stack, 'editor')).includes('kept by the keeper'), 20_000, `${VIM} to show the file`)
    // An unsaved edit: only the running vim has it.
    const follow = await stack.call('GET', '/v1/sessions/s/terminals/editor/follow?attachment=a', undefined, {
      accept: 'text/event-stream',
    })
    expect(follow.status).toBe(200)
    expect(
      (await stack.call('POST', '/v1/sessions/s/terminals/editor/input', 'Otyped before the restart\x1b', { 'termkeep-attachment': 'a' }))
        .status,
    ).toBe(204)
    await waitFor(async () => (await screenText(stack, 'editor')).includes('typed before the restart'), 20_000, 'the edit on screen')
    await follow.body?.cancel()
    const vim = pidOf('editor', VIM)!
    const sleep = pidOf('sleeper', 'sleep')!
    expect(vim).toBeGreaterThan(0)
    expect(sleep).toBeGreaterThan(0)

    expect(await ctrlC(first)).toBe(0)
    expect(first.output()).toContain('termkeep: 2 terminals keep running; `termkeep stop --terminals` ends them')
    expect([alive(vim), alive(sleep)]).toEqual([true, true])

    const second = await up(stack)
    expect(second.output()).toContain('termkeep sidecar: adopted 2 terminal(s) from the keeper')
    expect([alive(vim), alive(sleep)]).toEqual([true, true])
    expect(pidOf('editor', VIM)).toBe(vim)
    // termkeep ps: the same sleep, in its terminal's tree.
    const ps = spawnSync(process.execPath, [BIN, 'ps', 's', 'sleeper'], {
      env: { ...process.env, ...UNSET_CONFIG, TERMKEEP_URL: stack.url, TERMKEEP_TOKEN: TOKEN },
      encoding: 'utf8',
      timeout: 30_000,
    })
    expect([ps.status, ps.stderr]).toEqual([0, ''])
    expect(ps.stdout).toMatch(new RegExp(`^\\s*${sleep} \\S+\\s+\\S+\\s+sleep 600$`, 'm'))
    // Attach: the snapshot shows vim's screen with the unsaved edit, and vim redraws when the
    // attached client resizes it (as `termkeep attach` does to its own size).
    const api = new SidecarHttp({ url: stack.url, secret: TOKEN })
    const attached = await api.sse('/v1/sessions/s/terminals/editor/follow?attachment=b')
    const snapshot = await within(
      attached.until((m) => m.event === 'snapshot'),
      'the snapshot',
    )
    expect(snapshot.data.screen).toContain('typed before the restart')
    expect(snapshot.data.screen).toContain('kept by the keeper')
    expect(
      (await stack.call('POST', '/v1/sessions/s/terminals/editor/resize', { cols: 100, rows: 30 }, { 'termkeep-attachment': 'b' })).status,
    ).toBe(200)
    let redraw = ''
    await within(
      attached.until((m) => {
        if (m.event === 'output') redraw += Buffer.from(m.data.data, 'base64').toString()
        return redraw.includes('typed before the restart') && redraw.includes('kept by the keeper')
      }),
      `${VIM} to redraw`,
    )
    attached.close()
    expect(await ctrlC(second)).toBe(0)
  }, 180_000)

  it('an upgrade (serve from another build) keeps the running program: the new sidecar adopts it from the old keeper', async () => {
    // The other build: this tree with another version string (its own sidecar, API and CLI).
    const next = join(work, 'next')
    for (const dir of shippedFolders()) {
      cpSync(join(ROOT, dir), join(next, dir), { recursive: true, filter: (path) => !path.endsWith('.test.ts') })
    }
    for (const file of ['tsconfig.json']) cpSync(join(ROOT, file), join(next, file))
    const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }
    writeFileSync(join(next, 'package.json'), JSON.stringify({ ...pkg, version: `${pkg.version}-next` }))
    symlinkSync(join(ROOT, 'node_modules'), join(next, 'node_modules'))

    const stack = await stackEnv('upgrade')
    const first = await up(stack)
    expect((await stack.call('POST', '/v1/sessions', { id: 's', cwd: work })).status).toBe(201)
    expect((await stack.call('PUT', '/v1/sessions/s/terminals/long', { cols: 80, rows: 24, command: 'sleep 600' })).status).toBe(201)
    await waitFor(async () => pidOf('long', 'sleep'), 10_000, 'the program')
    const sleep = pidOf('long', 'sleep')!
    expect(await ctrlC(first)).toBe(0)

    const upgraded = await up(stack, join(next, 'cli/bin.js'))
    expect(upgraded.output()).toContain(`termkeep sidecar: adopted 1 terminal(s) from the keeper (pid`)
    expect(upgraded.output()).toContain(`termkeep ${pkg.version})`) // the keeper is the old build's
    const keeperLog = readFileSync(join(stack.env.TERMKEEP_DATA_DIR!, 'keeper', 'keeper.log'), 'utf8')
    expect(keeperLog).toContain(`a sidecar connected (sidecar, termkeep ${pkg.version}-next)`)
    expect(alive(sleep)).toBe(true)
    const info = (await (await stack.call('GET', '/v1/sessions/s/terminals/long')).json()) as { state: string }
    expect(info.state).toBe('running')
    expect(await ctrlC(upgraded)).toBe(0)
    expect(alive(sleep)).toBe(true)
  }, 180_000)
})
