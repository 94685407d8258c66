/**
 * Every start line docs/operations.md gives (between its start-lines markers) runs as written: a
 * shell runs the line in the repository with the settings in the environment, the test checks the
 * part's health, then stops it as Ctrl-C does (SIGINT to its process group) and sees it exit. The
 * sidecar alone must not warn about missing Node flags; the APIs alone (Node, Deno, a local
 * Worker) must reach it. And the README's Ctrl-C sentence is checked against `npm start`: the
 * shells keep running in the keeper (which holds none of npm start's pipes), the next `npm start`
 * adopts them, and the README's stop command ends them.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readlinkSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { randomSecret } from '../../common/crypto.ts'
import { SIDECAR_NODE_FLAGS } from '../../sidecar/node-flags.ts'
import { displayToLines, readDisplay } from '../../web/client/display.ts'
import { TermkeepClient } from '../../web/client/api.ts'
import { UNSET_CONFIG, ROOT } from '../smoke/targets.ts'
import { startLines } from './docs-check.ts'
import { freePort, waitFor } from '../support/ports.ts'
import { keeperPid, stopWatchedKeepers, watchKeeper } from '../support/keepers.ts'
import { alive } from '../support/serve.ts'
import { startSqld, type RunningSqld } from '../support/sqld.ts'

interface Started {
  child: ChildProcess
  output(): string
  /** What it printed on stderr alone. */
  errors(): string
  /** The exit code, or the signal that ended the line's first process (npm ends by SIGINT). */
  exited: Promise<number | NodeJS.Signals | null>
  /** Ctrl-C: SIGINT to the line's whole process group, then wait until every process of it is
   * gone; SIGKILL what is left after 30 s. */
  stop(): Promise<number | NodeJS.Signals | null>
}

/** Runs a documented line as a shell in the repository does, in a process group of its own. */
function run(line: string, env: Record<string, string>): Started {
  const child = spawn('/bin/sh', ['-c', line], {
    cwd: ROOT,
    env: { ...process.env, ...UNSET_CONFIG, CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_SEND_METRICS: 'false', ...env },
    detached: true,
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  let errors = ''
  child.stdout!.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr!.on('data', (chunk: Buffer) => {
    output += chunk.toString()
    errors += chunk.toString()
  })
  const exited = new Promise<number | NodeJS.Signals | null>((resolve) => child.once('close', (code, signal) => resolve(code ?? signal)))
  /** Sends a signal to the group; false once no process of it is left. */
  const signal = (name: NodeJS.Signals | 0) => {
    try {
      process.kill(-child.pid!, name)
      return true
    } catch {
      return false
    }
  }
  return {
    child,
    output: () => output,
    errors: () => errors,
    exited,
    stop: async () => {
      signal('SIGINT')
      await waitFor(async () => !signal(0), 30_000, `"${line}" to end after Ctrl-C`).catch(() => signal('SIGKILL'))
      return exited
    },
  }
}

async function health(url: string, headers: Record<string, string> = {}): Promise<any> {
  const response = await fetch(`${url}/v1/health`, { headers })
  return response.ok ? response.json() : undefined
}

const LINES = startLines(readFileSync(join(ROOT, 'docs/operations.md'), 'utf8'))
const lineFor = (pattern: RegExp) => {
  const line = LINES.find((l) => pattern.test(l))
  if (!line) throw new Error(`docs/operations.md's start lines have none matching ${pattern}: ${LINES.join(' | ')}`)
  return line
}

describe('the start lines in docs/operations.md', () => {
  const started: Started[] = []
  const scratch = mkdtempSync(join(tmpdir(), 'termkeep-start-lines-'))
  const secret = randomSecret('sc', 24)
  const start = (line: string, env: Record<string, string>) => {
    // A sidecar starts its data directory's keeper, which outlives it: stopped after the file.
    if (env.TERMKEEP_DATA_DIR) watchKeeper(env.TERMKEEP_DATA_DIR)
    const one = run(line.replace('SIDECAR_SECRET=…', `SIDECAR_SECRET=${secret}`), env)
    started.push(one)
    return one
  }
  const ready = async (what: string, one: Started, check: () => Promise<unknown>) => {
    await waitFor(async () => one.child.exitCode === null && (await check().catch(() => undefined)), 90_000, what).catch((error) => {
      throw new Error(`${(error as Error).message}; it printed:\n${one.output()}`)
    })
  }

  afterAll(async () => {
    for (const one of started) await one.stop()
    await stopWatchedKeepers()
    rmSync(scratch, { recursive: true, force: true })
  })

  it('give npm start, the sidecar alone, the Node API alone, Deno and a local Worker', () => {
    expect(LINES).toHaveLength(5)
    for (const pattern of [/^npm start$/, /npm run sidecar$/, /npm run start:api$/, /npx deno task start$/, /npm run worker:dev/]) {
      lineFor(pattern)
    }
  })

  describe('the parts alone, on one libSQL server', () => {
    let sqld: RunningSqld
    let sidecarUrl = ''
    beforeAll(async () => {
      sqld = await startSqld()
      sidecarUrl = `http://127.0.0.1:${await freePort()}`
    })
    afterAll(async () => {
      await sqld?.stop()
    })

    it('the sidecar alone starts with its flags (no warning)', async () => {
      const script = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts.sidecar as string
      for (const flag of SIDECAR_NODE_FLAGS) expect(script.split(' ')).toContain(flag)
      const sidecar = start(lineFor(/npm run sidecar$/), {
        SIDECAR_URL: sidecarUrl,
        DATABASE_URL: sqld.url,
        TERMKEEP_DATA_DIR: join(scratch, 'sidecar'),
      })
      await ready('the sidecar', sidecar, () => health(sidecarUrl, { authorization: `Bearer ${secret}` }))
      expect(sidecar.output()).not.toContain('started without --expose-gc')
    })

    it('the Node API, Deno and a local Worker alone serve health and reach that sidecar', async () => {
      const workerEnv = join(scratch, 'worker.env')
      writeFileSync(workerEnv, `DATABASE_URL=${sqld.url}\nSIDECAR_URL=${sidecarUrl}\nSIDECAR_SECRET=${secret}\nAUTO_MIGRATE=1\n`)
      const parts = await Promise.all(
        [
          { pattern: /npm run start:api$/, runtime: 'node' },
          { pattern: /npx deno task start$/, runtime: 'deno' },
          { pattern: /npm run worker:dev/, runtime: 'workerd' },
        ].map(async ({ pattern, runtime }) => {
          const port = await freePort()
          const line = lineFor(pattern).replace('worker.env', workerEnv)
          const env = { PORT: String(port), SIDECAR_URL: sidecarUrl, DATABASE_URL: sqld.url, TERMKEEP_DATA_DIR: join(scratch, runtime) }
          return { runtime, url: `http://127.0.0.1:${port}`, part: start(line, env) }
        }),
      )
      for (const { runtime, url, part } of parts) {
        await ready(`the ${runtime} API`, part, async () => (await health(url))?.sidecar?.reachable === true)
        expect(await health(url)).toMatchObject({ runtime, database: { reachable: true }, sidecar: { reachable: true } })
      }
      for (const { part } of parts) await part.stop()
    })

    it('a sidecar started by hand without the flags says what it misses', async () => {
      const bare = start('node --import tsx sidecar/main.ts', {
        SIDECAR_URL: `http://127.0.0.1:${await freePort()}`,
        SIDECAR_SECRET: secret,
        TERMKEEP_DATA_DIR: join(scratch, 'bare'),
      })
      await waitFor(async () => bare.output().includes('started without --expose-gc'), 60_000, 'the warning')
      await bare.stop()
    })
  })

  it("npm start serves; Ctrl-C leaves the shells running, as the README's first screen says; npm start adopts them; its stop command ends them", async () => {
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8')
    const firstScreen = readme.split('\n').slice(0, 40).join('\n')
    expect(firstScreen).toContain('**Ctrl-C stops the API and the sidecar; the shells keep running**')
    const stopLine = /`(\.\/termkeep stop --terminals)` ends them/.exec(firstScreen)?.[1]
    expect(stopLine).toBeDefined()
    const port = await freePort()
    const dataDir = join(scratch, 'serve')
    const env = { PORT: String(port), SIDECAR_URL: `http://127.0.0.1:${await freePort()}`, TERMKEEP_DATA_DIR: dataDir }
    const url = `http://127.0.0.1:${port}`
    const first = start(lineFor(/^npm start$/), env)
    await ready('npm start', first, async () => first.output().includes('admin token') && (await health(url))?.status === 'ok')
    const token = /admin token \(shown once, stored hashed\): (tk_\S+)/.exec(first.output())![1]!
    const client = new TermkeepClient({ url, token })
    const pidFile = join(scratch, 'shell.pid')
    const { id: sid } = await client.createSession(scratch)
    await client.json('PUT', `/v1/sessions/${sid}/terminals/kept`, {
      json: { cols: 80, rows: 24, command: `echo "the last screen"; echo $$ > ${pidFile}; exec sleep 600` },
    })
    await waitFor(async () => existsSync(pidFile) && readFileSync(pidFile, 'utf8').trim() !== '', 20_000, 'the shell to start')
    const shell = Number(readFileSync(pidFile, 'utf8'))
    const keeper = keeperPid(dataDir)!
    expect([alive(shell), alive(keeper)]).toEqual([true, true])
    // The keeper holds none of its starter's descriptors: a CI job that ran npm start ends.
    for (const fd of [0, 1, 2]) expect(readlinkSync(`/proc/${keeper}/fd/${fd}`)).not.toMatch(/^(pipe|socket):/)
    // stop() waits until every process of npm start's group is gone, then for its pipes to close.
    expect([0, 'SIGINT']).toContain(await first.stop())
    expect(first.errors()).toContain('termkeep: 1 terminal keeps running; `termkeep stop --terminals` ends it')
    expect(first.output()).not.toMatch(/killed|error/i)
    expect([alive(shell), keeperPid(dataDir)]).toEqual([true, keeper])

    const again = start(lineFor(/^npm start$/), env)
    await ready('npm start again', again, async () => (await health(url))?.status === 'ok')
    expect(again.output()).toContain('termkeep sidecar: adopted 1 terminal(s) from the keeper')
    expect((await client.terminal(sid, 'kept')).state).toBe('running')
    expect(alive(shell)).toBe(true)

    const stop = start(stopLine!, env)
    expect(await stop.exited).toBe(0)
    expect(stop.output()).toContain(`termkeep: ended the keeper (pid ${keeper}) and its 1 running terminal(s)`)
    expect([0, 'SIGINT']).toContain(await again.exited)
    expect([alive(shell), alive(keeper), keeperPid(dataDir)]).toEqual([false, false, undefined])
    // Everything ended; the last screen stays readable from the database.
    const last = start(lineFor(/^npm start$/), env)
    await ready('npm start after stop', last, async () => (await health(url))?.status === 'ok')
    expect((await client.terminal(sid, 'kept')).state).toBe('retired')
    const display = await readDisplay(client, sid, 'kept')
    expect(displayToLines(display, { color: false })).toContain('the last screen')
    expect([0, 'SIGINT']).toContain(await last.stop())
  })
})
