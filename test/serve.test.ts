/**
 * `termkeep serve` (what `npm start` runs) as a real process: migrates, starts the sidecar and the
 * API, prints the URL and the admin token once; Ctrl-C stops both processes and leaves the keeper
 * and its terminals running, which the next serve adopts; `termkeep stop --terminals` ends all.
 */
import { mkdtempSync, readFileSync, realpathSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createServer, type AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { LISTEN_BACKLOG } from '../schema/limits.ts'
import { spawnSync } from 'node:child_process'
import { keeperPid, stopKeeper } from './support/keepers.ts'
import { freePort, waitFor } from './support/ports.ts'
import { alive, listenerPid, serve } from './support/serve.ts'
import { UNSET_CONFIG } from './smoke/targets.ts'

const BIN = new URL('../cli/bin.js', import.meta.url).pathname

/** The accept-queue size of the socket listening on `port` (`ss` shows it as Send-Q). */
async function listenBacklog(port: number): Promise<number> {
  const { execFileSync } = await import('node:child_process')
  return Number(
    execFileSync('ss', ['-ltnH', `sport = :${port}`], { encoding: 'utf8' })
      .trim()
      .split(/\s+/)[2],
  )
}

const sidecarPid = async (port: number) => listenerPid(port)

describe('termkeep serve', () => {
  it('serves health, prints the admin token once, stops on Ctrl-C leaving its terminals to the next one, and stop --terminals ends all', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-serve-'))
    const port = await freePort()
    let sidecarPort = await freePort()
    while (sidecarPort === port) sidecarPort = await freePort()
    const env = { TERMKEEP_DATA_DIR: dataDir, PORT: String(port), SIDECAR_URL: `http://127.0.0.1:${sidecarPort}` }

    const first = serve(env)
    try {
      // The admin token line is serve's last line of start-up output (each line may arrive apart).
      await waitFor(async () => first.output().includes('admin token'), 60_000, 'serve to start').catch((error: Error) => {
        throw new Error(`${error.message}; serve printed:\n${first.output()}`)
      })
      expect(first.output()).toContain(`termkeep: API listening on http://127.0.0.1:${port}`)
      const token = first.output().match(/admin token \(shown once, stored hashed\): (tk_\S+)/)?.[1]
      expect(token).toBeDefined()
      const health = await (await fetch(`http://127.0.0.1:${port}/v1/health`)).json()
      expect(health).toMatchObject({ status: 'ok', database: { reachable: true }, sidecar: { reachable: true } })

      const pid = await sidecarPid(sidecarPort)
      expect(pid).toBeDefined()
      // Both listeners queue a burst of connections instead of dropping SYNs (Node's default 511).
      const somaxconn = Number(readFileSync('/proc/sys/net/core/somaxconn', 'utf8'))
      for (const listening of [port, sidecarPort]) expect(await listenBacklog(listening)).toBe(Math.min(LISTEN_BACKLOG, somaxconn))
      // A live terminal, so that the sidecar's shutdown has work to do (kill, last screen, rows).
      const api = (method: string, path: string, body: unknown) =>
        fetch(`http://127.0.0.1:${port}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify(body),
        })
      expect((await api('POST', '/v1/workspaces', { path: realpathSync(dataDir) })).status).toBe(201)
      expect((await api('POST', '/v1/sessions', { id: 'serve-s', cwd: dataDir })).status).toBe(201)
      expect((await api('PUT', '/v1/sessions/serve-s/terminals/serve-t', { cols: 80, rows: 24 })).status).toBe(201)
      // serve waits for its sidecar's shutdown: a supervisor that kills what is left once serve
      // exits would otherwise cut short the sidecar's last saves. ('exit', not 'close': the
      // sidecar shares serve's output pipes, so 'close' waits for both anyway.)
      const sidecarAliveAtExit = new Promise<boolean>((resolve) => first.child.once('exit', () => resolve(alive(pid!))))
      first.child.kill('SIGINT')
      expect(await first.exited).toBe(0)
      expect(await sidecarAliveAtExit).toBe(false)
      // The keeper and the terminal's shell run on, and serve said so.
      expect(first.output()).toContain('termkeep: 1 terminal keeps running; `termkeep stop --terminals` ends it')
      expect(keeperPid(dataDir)).toBeDefined()
    } finally {
      first.child.kill('SIGKILL')
    }

    // Through ./termkeep this time: stop must know serve by that command line too.
    const second = serve(env, { launcher: true })
    try {
      await waitFor(async () => second.output().includes('admin token'), 60_000, 'serve to restart').catch((error: Error) => {
        throw new Error(`${error.message}; serve printed:\n${second.output()}`)
      })
      expect(second.output()).not.toContain('tk_')
      expect(second.output()).toContain('an admin token already exists')
      expect(second.output()).toContain('termkeep sidecar: adopted 1 terminal(s) from the keeper')
      const keeper = keeperPid(dataDir)!
      // stop --terminals: the keeper (and the shell), then serve; nothing of termkeep is left.
      const stopped = spawnSync(process.execPath, [BIN, 'stop', '--terminals'], {
        env: { ...process.env, ...UNSET_CONFIG, ...env },
        encoding: 'utf8',
        timeout: 60_000,
      })
      expect([stopped.status, stopped.stderr]).toEqual([0, ''])
      expect(stopped.stdout).toContain(`termkeep: ended the keeper (pid ${keeper}) and its 1 running terminal(s)`)
      expect(stopped.stdout).toMatch(/termkeep: stopped termkeep serve \(pid \d+\)/)
      expect(await second.exited).toBe(0)
      expect(alive(keeper)).toBe(false)
      expect(keeperPid(dataDir)).toBeUndefined()
    } finally {
      second.child.kill('SIGKILL')
      await stopKeeper(dataDir)
    }
  }, 180_000)

  it('stops the sidecar it started when the API port is taken', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-serve-busy-'))
    const blocker = createServer().listen(0, '127.0.0.1')
    await new Promise((r) => blocker.once('listening', r))
    const port = (blocker.address() as AddressInfo).port
    let sidecarPort = await freePort()
    while (sidecarPort === port) sidecarPort = await freePort()
    const busy = serve({ TERMKEEP_DATA_DIR: dataDir, PORT: String(port), SIDECAR_URL: `http://127.0.0.1:${sidecarPort}` })
    try {
      expect(await busy.exited).toBe(1)
      expect(busy.output()).toContain(`termkeep: the API could not start: port ${port} is already in use; stopping`)
      // Nothing listens on the sidecar port any more.
      await waitFor(async () => (await sidecarPid(sidecarPort)) === undefined, 10_000, 'the sidecar to stop')
    } finally {
      busy.child.kill('SIGKILL')
      blocker.close()
      await stopKeeper(dataDir)
    }
  })

  it('leaves a running instance alone: a second one on its data directory or its sidecar port stops at once, in one line', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-serve-twice-'))
    const port = await freePort()
    const sidecarPort = await freePort()
    const first = serve({ TERMKEEP_DATA_DIR: dataDir, PORT: String(port), SIDECAR_URL: `http://127.0.0.1:${sidecarPort}` })
    try {
      await waitFor(async () => first.output().includes('admin token'), 60_000, 'serve to start').catch((error: Error) => {
        throw new Error(`${error.message}; serve printed:\n${first.output()}`)
      })
      const token = first.output().match(/admin token \(shown once, stored hashed\): (tk_\S+)/)![1]!
      const call = (method: string, path: string, body?: unknown) =>
        fetch(`http://127.0.0.1:${port}${path}`, {
          method,
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: body === undefined ? undefined : JSON.stringify(body),
        })
      expect((await call('POST', '/v1/sessions', { id: 's1', cwd: dataDir })).status).toBe(201)
      expect((await call('PUT', '/v1/sessions/s1/terminals/t1', { cols: 80, rows: 24 })).status).toBe(201)

      const otherDir = mkdtempSync(join(tmpdir(), 'termkeep-serve-other-'))
      for (const [env, reason] of [
        [
          { TERMKEEP_DATA_DIR: dataDir, PORT: String(await freePort()), SIDECAR_URL: `http://127.0.0.1:${await freePort()}` },
          `another termkeep sidecar (pid `,
        ],
        [
          { TERMKEEP_DATA_DIR: otherDir, PORT: String(await freePort()), SIDECAR_URL: `http://127.0.0.1:${sidecarPort}` },
          `127.0.0.1:${sidecarPort} is already in use (SIDECAR_URL)`,
        ],
      ] as const) {
        const second = serve(env)
        try {
          expect(await second.exited).toBe(1)
          expect(second.output()).toContain(reason)
          expect(second.output()).not.toMatch(/^\s+at /m) // no stack trace
        } finally {
          second.child.kill('SIGKILL')
        }
      }
      // The first instance's terminal is still live, its journal still there.
      const info = (await (await call('GET', '/v1/sessions/s1/terminals/t1')).json()) as { state: string }
      expect(info.state).toBe('running')
      expect((await call('GET', '/v1/sessions/s1/terminals/t1/output?after=0')).status).toBe(200)
      first.child.kill('SIGTERM')
      expect(await first.exited).toBe(0)
    } finally {
      first.child.kill('SIGKILL')
      await stopKeeper(dataDir)
    }
  }, 180_000)

  it('refuses a bad setting with a one-line message and exit code 1', async () => {
    const bad = serve({ PORT: 'eighty' })
    expect(await bad.exited).toBe(1)
    expect(bad.output().trim()).toBe('termkeep: invalid PORT="eighty": an integer from 1 to 65535')
  })

  it('names DATABASE_URL in one line when a database file cannot be opened', async () => {
    const down = serve({
      TERMKEEP_DATA_DIR: mkdtempSync(join(tmpdir(), 'termkeep-serve-nofile-')),
      PORT: String(await freePort()),
      DATABASE_URL: 'file:/proc/nonexistent/x.db',
    })
    try {
      expect(await down.exited).toBe(1)
      const lines = down.output().trim().split('\n')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(
        /^termkeep: the database at file:\/proc\/nonexistent\/x\.db \(DATABASE_URL\) could not be opened or migrated: .+; stopping$/,
      )
    } finally {
      down.child.kill('SIGKILL')
    }
  })

  it('names DATABASE_URL in one line when the database cannot be reached', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-serve-nodb-'))
    const closed = await freePort()
    const url = `http://127.0.0.1:${closed}`
    const down = serve({
      TERMKEEP_DATA_DIR: dataDir,
      PORT: String(await freePort()),
      DATABASE_URL: url,
      DATABASE_AUTH_TOKEN: 'secret-token',
    })
    try {
      expect(await down.exited).toBe(1)
      const lines = down.output().trim().split('\n')
      expect(lines).toHaveLength(1)
      expect(lines[0]).toMatch(
        new RegExp(
          `^termkeep: the database at http://127\\.0\\.0\\.1:${closed}/ \\(DATABASE_URL\\) could not be opened or migrated: .+; stopping$`,
        ),
      )
      expect(down.output()).not.toContain('secret-token')
    } finally {
      down.child.kill('SIGKILL')
    }
  })
})
