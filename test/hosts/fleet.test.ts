/**
 * Three hosts behind one Node API on one sqld: three sidecars with their own data directories,
 * host ids and secrets (each derived from the API's fleet secret) stand in for three machines.
 * Sessions are placed on a host and every live call goes to it; kill -9 of one host's sidecar
 * makes its live routes 503 `host/unavailable` naming it while the others keep typing and
 * printing, its stored data (session, terminal list, display) is still served, its terminals are
 * shown unreachable (not retired), and once it is back its sidecar adopts them from the host's
 * keeper (which kept them running) and new ones run there. `serve --host-only` starts a host as
 * `serve` does (keeper and sidecar), without the API.
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startNodeApi, type RunningApi } from '../../api/runtime/node.ts'
import { deriveHostSecret } from '../../common/crypto.ts'
import { GRANTS } from '../../schema/grants.ts'
import { HOST_LEASE_MS } from '../../schema/limits.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { hostGenerations } from '../../storage/tables.ts'
import { createToken } from '../../storage/tokens.ts'
import { eq } from 'drizzle-orm'
import { waitFor } from '../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../support/sidecar.ts'
import { startSqld, type RunningSqld } from '../support/sqld.ts'
import { runCli, startCli } from '../cli/run.ts'
import { callTool, errorOf, factsOf, mcpClient } from '../support/mcp.ts'
import { freePort } from '../support/ports.ts'
import { watchKeeper } from '../support/keepers.ts'
import { shellsFixture } from '../support/terminals.ts'

const FLEET_SECRET = `fleet-${Math.random().toString(36).slice(2)}-secret-xxxxxxxx`
const NAMES = ['alpha', 'beta', 'gamma'] as const
type Name = (typeof NAMES)[number]
const shells = shellsFixture({ echoer: 'echo "home:$HOME"; while read line; do echo "got:$line"; done' })
const work = mkdtempSync(join(tmpdir(), 'termkeep-fleet-'))

let sqld: RunningSqld
let storage: Storage
let api: RunningApi
let token: string
const hosts = {} as Record<Name, { dataDir: string; id: string; sidecar: RunningSidecar }>
const sessionOf = {} as Record<Name | 'delta', string>

/** A host's data directory with its id made in advance, so its secret can be derived first. */
async function startHost(name: Name, dataDir?: string): Promise<void> {
  const dir = dataDir ?? mkdtempSync(join(tmpdir(), `termkeep-host-${name}-`))
  const id = hosts[name]?.id ?? `host-${name}-${Math.random().toString(36).slice(2, 8)}`
  writeFileSync(join(dir, 'host.id'), `${id}\n`)
  const sidecar = await startSidecar({
    databaseUrl: sqld.url,
    dataDir: dir,
    // SIDECAR_SECRET is not the fleet's: a host holds only its own (TERMKEEP_HOST_SECRET).
    secret: `not-the-fleet-secret-${name}-xxxxxxxx`,
    env: { TERMKEEP_HOST: name, TERMKEEP_HOST_SECRET: await deriveHostSecret(FLEET_SECRET, id), TERMKEEP_SHELLS_FILE: shells.shellsFile },
  })
  hosts[name] = { dataDir: dir, id, sidecar }
}

function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  return fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }), ...headers },
    body: body === undefined ? undefined : JSON.stringify(body),
  })
}

async function json(response: Response): Promise<any> {
  return response.json()
}

const terminal = (name: Name | 'delta', tid = 't1') => `/v1/sessions/${sessionOf[name]}/terminals/${tid}`

async function output(name: Name | 'delta', tid = 't1'): Promise<string> {
  const page = await json(await call('GET', `${terminal(name, tid)}/output?after=0&limit=256`))
  return page.items.map((item: any) => (item.kind === 'data' ? Buffer.from(item.data, 'base64').toString() : '')).join('')
}

function type(name: Name | 'delta', text: string, tid = 't1') {
  return call('POST', `${terminal(name, tid)}/keys`, { text: `${text}\n` }, { 'termkeep-attachment': `typist-${name}` })
}

async function echoes(name: Name | 'delta', text: string, tid = 't1'): Promise<void> {
  const typed = await type(name, text, tid)
  expect(typed.status, await typed.clone().text()).toBe(200)
  await waitFor(async () => (await output(name, tid)).includes(`got:${text}`), 10_000, `${name} to echo ${text}`)
}

beforeAll(async () => {
  sqld = await startSqld()
  for (const name of NAMES) await startHost(name)
  storage = await openStorage({ url: sqld.url })
  api = await startNodeApi({
    storage,
    // The configured sidecar is one of them (health's); the others are found in the database.
    sidecarUrl: hosts.alpha.sidecar.url,
    sidecarSecret: `api-own-sidecar-secret-xxxxxxxx`,
    fleetSecret: FLEET_SECRET,
    host: '127.0.0.1',
    port: 0,
  })
  token = (await createToken(storage.db, { name: 'fleet', grants: [...GRANTS], sessions: 'all' })).secret
}, 120_000)

afterAll(async () => {
  await api?.close()
  for (const name of NAMES) await hosts[name]?.sidecar.stop()
  storage?.close()
  await sqld?.stop()
})

describe('sessions on hosts', () => {
  it('places a session on the named host, and refuses an ambiguous or unknown one with a typed error', async () => {
    const cwd = join(work, 'project')
    mkdirSync(cwd, { recursive: true })
    const ambiguous = await call('POST', '/v1/sessions', { cwd })
    expect(ambiguous.status).toBe(409)
    expect((await json(ambiguous)).error.code).toBe('host/ambiguous')
    const unknown = await call('POST', '/v1/sessions', { cwd, host: 'delta' })
    expect(unknown.status).toBe(400)
    expect((await json(unknown)).error).toMatchObject({ code: 'host/unknown', host: 'delta' })
    for (const name of NAMES) {
      // By name, and gamma by its id.
      const host = name === 'gamma' ? hosts.gamma.id : name
      const created = await call('POST', '/v1/sessions', { id: `ses-${name}`, cwd, host })
      expect(created.status).toBe(201)
      const { session } = await json(created)
      expect(session.host).toBe(hosts[name].id)
      sessionOf[name] = session.id
      expect((await json(await call('GET', `/v1/sessions/${session.id}`))).session.host).toBe(hosts[name].id)
    }
  })

  it("routes every live call to the session's host", async () => {
    for (const name of NAMES) {
      const created = await call('PUT', terminal(name), { cols: 80, rows: 24, shell: shells.path('echoer') })
      expect(created.status).toBe(201)
      // Each sidecar gives its programs its own HOME (inside its data directory): the shell ran there.
      await waitFor(async () => (await output(name)).includes(`home:${hosts[name].dataDir}`), 10_000, `${name}'s shell`)
      await echoes(name, `hello-${name}`)
      // Searches and commands reach the same host: another one does not know the terminal.
      const pattern = `?pattern=${encodeURIComponent(`got:hello-${name}`)}`
      const found = await json(await call('GET', `${terminal(name)}/search${pattern}`))
      expect(found.matches.map((m: any) => m.line)).toContain(`got:hello-${name}`)
      const inSession = await json(await call('GET', `/v1/sessions/${sessionOf[name]}/search${pattern}`))
      expect(inSession.terminals.map((t: any) => [t.terminalId, t.matches.length])).toEqual([['t1', 1]])
      // The echoer is no shell at a prompt: its own host says so (409), another would not know it.
      const run = await call('POST', `${terminal(name)}/commands`, { command: 'true' })
      expect([run.status, (await json(run)).error.code]).toEqual([409, 'command/not-at-prompt'])
    }
  }, 60_000)
})

describe('where a person or an agent looks', () => {
  it("lists the hosts (GET /v1/hosts), a session-bound token only its sessions' hosts", async () => {
    const { hosts: listed } = await json(await call('GET', '/v1/hosts'))
    expect(listed.map((h: any) => [h.name, h.id, h.url, h.up])).toEqual(NAMES.map((n) => [n, hosts[n].id, hosts[n].sidecar.url, true]))
    const bound = (await createToken(storage.db, { name: 'alpha only', grants: [...GRANTS], sessions: [sessionOf.alpha] })).secret
    const seen = await fetch(`${api.url}/v1/hosts`, { headers: { authorization: `Bearer ${bound}` } })
    expect((await json(seen)).hosts.map((h: any) => h.name)).toEqual(['alpha'])
    // Another host's session is as missing as any other session outside the token's.
    const other = await fetch(`${api.url}${terminal('beta')}`, { headers: { authorization: `Bearer ${bound}` } })
    expect(other.status).toBe(404)
  })

  it("gives each host a secret of its own: one host's does not open another, the fleet's opens none", async () => {
    const alphaSecret = await deriveHostSecret(FLEET_SECRET, hosts.alpha.id)
    const ask = (name: Name, secret: string) =>
      fetch(`${hosts[name].sidecar.url}/v1/sessions/${sessionOf[name]}/terminals/t1`, { headers: { authorization: `Bearer ${secret}` } })
    expect((await ask('alpha', alphaSecret)).status).toBe(200)
    expect((await ask('beta', alphaSecret)).status).toBe(401)
    expect((await ask('gamma', alphaSecret)).status).toBe(401)
    expect((await ask('alpha', FLEET_SECRET)).status).toBe(401)
  })

  it('MCP: list_hosts, and create_session with a host', async () => {
    const client = await mcpClient(api.url, token)
    try {
      const listed = factsOf(await callTool(client, 'list_hosts'))
      expect(listed.hosts.map((h: any) => h.name)).toEqual([...NAMES])
      const created = factsOf(await callTool(client, 'create_session', { cwd: work, host: 'gamma' }))
      expect(created.session.host).toBe(hosts.gamma.id)
      expect(errorOf(await callTool(client, 'create_session', { cwd: work })).code).toBe('host/ambiguous')
    } finally {
      await client.close()
    }
  })
})

describe('a host that is down', () => {
  it('answers 503 host/unavailable on its live routes, serves what is stored, and leaves the others working', async () => {
    // A settled screen to serve while it is down.
    await waitFor(async () => (await call('GET', `${terminal('beta')}/display`)).status === 200, 10_000, "beta's display")
    await hosts.beta.sidecar.kill()

    for (const [method, path, body] of [
      ['POST', `${terminal('beta')}/keys`, { text: 'x' }],
      ['GET', `${terminal('beta')}/output?after=0`, undefined],
      ['GET', `/v1/sessions/${sessionOf.beta}/shells`, undefined],
      ['PUT', terminal('beta', 't2'), { cols: 80, rows: 24 }],
      ['POST', `${terminal('beta')}/commands`, { command: 'true' }],
      ['GET', `${terminal('beta')}/search?pattern=got`, undefined],
      ['GET', `/v1/sessions/${sessionOf.beta}/search?pattern=got`, undefined],
      ['DELETE', `/v1/sessions/${sessionOf.beta}/terminals`, undefined],
    ] as const) {
      const response = await call(method, path, body, { 'termkeep-attachment': 'typist-beta' })
      expect(response.status, path).toBe(503)
      const { error } = await json(response)
      expect(error).toMatchObject({ code: 'host/unavailable', host: hosts.beta.id, hostName: 'beta' })
      expect(error.message).toContain('beta')
    }
    // Stored: the session, its terminal list, the settled display, its history and command records.
    expect((await call('GET', `/v1/sessions/${sessionOf.beta}`)).status).toBe(200)
    expect((await json(await call('GET', `${terminal('beta')}/commands`))).commands).toEqual([])
    const history = await call('GET', `${terminal('beta')}/scrollback`)
    expect(history.status, await history.clone().text()).toBe(200)
    const display = await call('GET', `${terminal('beta')}/display`)
    expect(display.status).toBe(200)
    expect(await display.text()).toContain('got:hello-beta')
    // The others: every byte still arrives.
    await echoes('alpha', 'while-beta-is-down')
    await echoes('gamma', 'while-beta-is-down')

    // Once its heartbeat is older than the lease (here: made so), it is known down: refused at
    // once, and its terminals are shown unreachable, not retired.
    await storage.db
      .update(hostGenerations)
      .set({ heartbeatAt: Date.now() - HOST_LEASE_MS })
      .where(eq(hostGenerations.generation, hosts.beta.sidecar.generation))
    await new Promise((r) => setTimeout(r, 1_100)) // the API's hosts cache (HOSTS_CACHE_MS)
    const listed = await json(await call('GET', `/v1/sessions/${sessionOf.beta}/terminals`))
    expect(listed.terminals.map((t: any) => [t.id, t.state, t.unreachable])).toEqual([['t1', 'running', true]])
    expect((await json(await call('GET', terminal('alpha')))).unreachable).toBeUndefined()
    const known = await call('GET', `${terminal('beta')}/output?after=0`)
    expect(known.status).toBe(503)
    expect((await json(known)).error.message).toMatch(/host beta .*no heartbeat/)
  }, 60_000)

  it("comes back: its keeper's terminal adopted, every byte kept, a new one runs there, the others untouched", async () => {
    await startHost('beta', hosts.beta.dataDir)
    await new Promise((r) => setTimeout(r, 1_100))
    const old = await json(await call('GET', terminal('beta')))
    expect(old.state).toBe('running')
    expect(old.unreachable).toBeUndefined()
    expect(await output('beta')).toContain('got:hello-beta')
    await echoes('beta', 'adopted')
    expect((await call('PUT', terminal('beta', 't2'), { cols: 80, rows: 24, shell: shells.path('echoer') })).status).toBe(201)
    await echoes('beta', 'back', 't2')
    for (const name of ['alpha', 'gamma'] as const) {
      expect((await json(await call('GET', terminal(name)))).state).toBe('running')
      await echoes(name, 'after-beta-returned')
    }
  }, 60_000)
})

describe('the command line', () => {
  it('termkeep hosts lists them; new --host starts a terminal there; hosts secret derives what a host needs', async () => {
    const env = { TERMKEEP_URL: api.url, TERMKEEP_TOKEN: token }
    const listed = await runCli(['hosts'], env)
    expect(listed.code, listed.stderr).toBe(0)
    for (const name of NAMES) expect(listed.stdout).toMatch(new RegExp(`^${name}  ${hosts[name].id}  up  v`, 'm'))
    const started = await runCli(['new', '--cwd', work, '--host', 'gamma', '--detached'], env)
    expect(started.code, started.stderr).toBe(0)
    const [sid, tid] = started.stdout.trim().split(' ')
    expect((await json(await call('GET', `/v1/sessions/${sid}`))).session.host).toBe(hosts.gamma.id)
    expect((await json(await call('GET', `/v1/sessions/${sid}/terminals/${tid}`))).state).toBe('running')
    const ambiguous = await runCli(['new', '--cwd', work, '--detached'], env)
    expect(ambiguous.code).toBe(1)
    expect(ambiguous.stderr).toContain('host/ambiguous')
    const secret = await runCli(['hosts', 'secret', hosts.alpha.id], { TERMKEEP_FLEET_SECRET: FLEET_SECRET, DATABASE_URL: sqld.url })
    expect(secret.stdout.trim()).toBe(await deriveHostSecret(FLEET_SECRET, hosts.alpha.id))
  }, 60_000)

  it('termkeep serve --host-only joins the fleet: a fourth host, up, whose terminals the API reaches and its keeper keeps', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'termkeep-host-only-'))
    const id = (await runCli(['hosts', 'id'], { TERMKEEP_DATA_DIR: dataDir })).stdout.trim()
    const hostSecret = (
      await runCli(['hosts', 'secret', id], { TERMKEEP_FLEET_SECRET: FLEET_SECRET, DATABASE_URL: sqld.url })
    ).stdout.trim()
    const hostEnv = {
      TERMKEEP_DATA_DIR: dataDir,
      DATABASE_URL: sqld.url,
      SIDECAR_URL: `http://127.0.0.1:${await freePort()}`,
      SIDECAR_SECRET: '',
      TERMKEEP_HOST: 'delta',
      TERMKEEP_HOST_SECRET: hostSecret,
      TERMKEEP_SHELLS_FILE: shells.shellsFile,
      HOME: join(dataDir, 'home'),
    }
    let serving = startCli(['serve', '--host-only'], hostEnv)
    watchKeeper(dataDir, serving.child)
    // Registered (up) from its claim on; serving once its sidecar said it is ready (the keeper
    // reached, its terminals adopted).
    const up = async () => {
      await waitFor(
        async () => (await json(await call('GET', '/v1/hosts'))).hosts.some((h: any) => h.name === 'delta' && h.id === id && h.up),
        30_000,
        'delta to register',
      )
      await waitFor(async () => serving.stdout().includes(`host ${id} serving`), 30_000, 'delta to serve')
    }
    try {
      await up()
      const created = await json(await call('POST', '/v1/sessions', { id: 'ses-delta', cwd: work, host: 'delta' }))
      expect(created.session.host).toBe(id)
      sessionOf.delta = 'ses-delta'
      expect((await call('PUT', terminal('delta'), { cols: 80, rows: 24, shell: shells.path('echoer') })).status).toBe(201)
      await echoes('delta', 'from-delta')

      // Stopped as serve is: the keeper it started keeps the terminal; started again, it adopts it.
      serving.child.kill('SIGTERM')
      const stopped = await serving.exited
      expect(stopped.code, stopped.stderr).toBe(0)
      expect(stopped.stderr).toContain('1 terminal keeps running')
      serving = startCli(['serve', '--host-only'], hostEnv)
      watchKeeper(dataDir, serving.child)
      await new Promise((r) => setTimeout(r, 1_100)) // the API's hosts cache (HOSTS_CACHE_MS)
      await up()
      expect((await json(await call('GET', terminal('delta')))).state).toBe('running')
      await echoes('delta', 'adopted-by-delta')
      // Stopped again, `termkeep stop --terminals` ends the keeper it left and the terminal.
      serving.child.kill('SIGTERM')
      expect((await serving.exited).code).toBe(0)
      const ended = await runCli(['stop', '--terminals'], { TERMKEEP_DATA_DIR: dataDir })
      expect(ended.stdout, ended.stderr).toMatch(/ended the keeper \(pid \d+\) and its 1 running terminal/)
    } finally {
      serving.child.kill('SIGTERM')
      await serving.exited
      await runCli(['stop', '--terminals'], { TERMKEEP_DATA_DIR: dataDir })
    }
  }, 90_000)
})
