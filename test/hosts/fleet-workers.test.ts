/**
 * Three hosts behind the Workers entry: the bundle `wrangler deploy --dry-run` makes, run by
 * workerd, with only the fleet secret and one sqld. Three sidecars (own data directories, host
 * ids and derived secrets) stand in for three machines.
 *
 * - Terminals on each host through it: input, follow, display.
 * - kill -9 of one host's sidecar while all three flood: the other two lose nothing (their
 *   journals are byte for byte what the program wrote to a file with `tee`; their display
 *   revisions move forward without a gap or a repeat and the last one covers the last byte), the
 *   killed host's live routes answer 503 host/unavailable while its stored data is served, and
 *   once back it adopts its terminals from the keeper (which recorded every byte meanwhile).
 * - Rotating one host's secret (`termkeep hosts rotate`): same id, no other host touched, the API
 *   uses the new one at once, and the old one opens nothing once the host runs with the new.
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { and, asc, eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { deriveHostSecret } from '../../common/crypto.ts'
import { GRANTS } from '../../schema/grants.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { displayRevisions } from '../../storage/tables.ts'
import { createToken } from '../../storage/tokens.ts'
import { runCli } from '../cli/run.ts'
import { waitFor } from '../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../support/sidecar.ts'
import { startSqld, type RunningSqld } from '../support/sqld.ts'
import { SseStream, shellsFixture } from '../support/terminals.ts'
import { buildWorker, startWorkersTarget, workerdBinary, type RunningTarget, type WorkerBundle } from '../smoke/targets.ts'

const FLEET_SECRET = `fleet-${Math.random().toString(36).slice(2)}-secret-xxxxxxxx`
const NAMES = ['alpha', 'beta', 'gamma'] as const
type Name = (typeof NAMES)[number]
/** The flood: about 1.3 MiB of base64 in bursts 0.35 s apart (≥ 3 s: over the settle window, so
 * each burst settles a display revision), kept by `tee` in a file. */
const FLOOD_BURSTS = 10
const shells = shellsFixture({ echoer: 'echo ready; while read line; do echo "got:$line"; done' })
const work = mkdtempSync(join(tmpdir(), 'termkeep-fleet-workers-'))

let bundle: WorkerBundle
let sqld: RunningSqld
let storage: Storage
let api: RunningTarget
let token: string
const hosts = {} as Record<Name, { dataDir: string; id: string; secret: string; sidecar: RunningSidecar }>

async function startHost(name: Name, secret?: string): Promise<void> {
  const dataDir = hosts[name]?.dataDir ?? mkdtempSync(join(tmpdir(), `termkeep-wk-${name}-`))
  const id = hosts[name]?.id ?? `host-${name}-${Math.random().toString(36).slice(2, 8)}`
  writeFileSync(join(dataDir, 'host.id'), `${id}\n`)
  const hostSecret = secret ?? (await deriveHostSecret(FLEET_SECRET, id))
  const sidecar = await startSidecar({
    databaseUrl: sqld.url,
    dataDir,
    secret: `not-the-fleet-secret-${name}-xxxxxxxx`,
    env: { TERMKEEP_HOST: name, TERMKEEP_HOST_SECRET: hostSecret, TERMKEEP_SHELLS_FILE: shells.shellsFile },
  })
  hosts[name] = { dataDir, id, secret: hostSecret, sidecar }
}

/** A JSON body, or a string sent as is (raw input). */
function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}) {
  const json = body !== undefined && typeof body !== 'string'
  return fetch(`${api.url}${path}`, {
    method,
    headers: { authorization: `Bearer ${token}`, ...(json ? { 'content-type': 'application/json' } : {}), ...headers },
    body: json ? JSON.stringify(body) : (body as string | undefined),
  })
}

const terminal = (name: Name, tid: string) => `/v1/sessions/ses-${name}/terminals/${tid}`

/** The whole journal through the API, page by page; `closed` once the byte source ended. */
async function journal(name: Name, tid: string): Promise<{ bytes: Buffer; closed: boolean; last: number }> {
  const parts: Buffer[] = []
  for (let after = 0; ; ) {
    const response = await call('GET', `${terminal(name, tid)}/output?after=${after}&limit=256`)
    expect(response.status, `${name}'s journal`).toBe(200)
    const page = (await response.json()) as { items: { kind: string; data?: string }[]; next: number; end: string | null }
    for (const item of page.items) if (item.kind === 'data') parts.push(Buffer.from(item.data!, 'base64'))
    if (page.end === 'closed' || page.next === after) return { bytes: Buffer.concat(parts), closed: page.end === 'closed', last: page.next }
    after = page.next
  }
}

/** The display's `begin` (revision, sequence) and its text, read through the API. */
async function display(name: Name, tid: string): Promise<{ revision: number; sequence: number; text: string } | undefined> {
  const response = await call('GET', `${terminal(name, tid)}/display`)
  if (response.status === 404) return undefined
  expect(response.status, `${name}'s display`).toBe(200)
  const text = await response.text()
  const begin = /event: begin\ndata: (.*)\n/.exec(text)
  if (!begin) throw new Error(`no begin in ${text.slice(0, 200)}`)
  const { revision, sequence } = JSON.parse(begin[1]!) as { revision: number; sequence: number }
  return { revision, sequence, text }
}

const fleetReady = async () => {
  bundle = buildWorker()
  sqld = await startSqld()
  storage = await openStorage({ url: sqld.url })
}

describe.runIf(workerdBinary())('three hosts behind the Workers entry (workerd) on one sqld', () => {
  beforeAll(async () => {
    await fleetReady()
    // The first sidecar migrates the empty database; the others then start side by side.
    await startHost('alpha')
    await Promise.all([startHost('beta'), startHost('gamma')])
    api = await startWorkersTarget(bundle, {
      DATABASE_URL: sqld.url,
      SIDECAR_URL: hosts.alpha.sidecar.url,
      SIDECAR_SECRET: 'the-apis-own-sidecar-secret-xxxxxxxx',
      TERMKEEP_FLEET_SECRET: FLEET_SECRET,
      AUTO_MIGRATE: '0',
    })
    token = (await createToken(storage.db, { name: 'fleet', grants: [...GRANTS], sessions: 'all' })).secret
    for (const name of NAMES) {
      const created = await call('POST', '/v1/sessions', { id: `ses-${name}`, cwd: work, host: name })
      expect(created.status, await created.clone().text()).toBe(201)
    }
  }, 180_000)

  afterAll(async () => {
    await api?.stop()
    for (const name of NAMES) await hosts[name]?.sidecar.stop()
    storage?.close()
    await sqld?.stop()
    bundle?.remove()
    for (const dir of [work, shells.dir, ...NAMES.map((n) => hosts[n]?.dataDir)]) if (dir) rmSync(dir, { recursive: true, force: true })
  })

  it('creates a terminal on each host; input, follow and display go to that host', async () => {
    const { hosts: listed } = (await (await call('GET', '/v1/hosts')).json()) as { hosts: any[] }
    const byName = listed.sort((x, y) => x.name.localeCompare(y.name))
    expect(byName.map((h) => [h.name, h.id, h.up, h.secretEpoch])).toEqual(NAMES.map((n) => [n, hosts[n].id, true, 0]))
    await Promise.all(
      NAMES.map(async (name) => {
        const created = await call('PUT', terminal(name, 'echo'), { cols: 80, rows: 24, shell: shells.path('echoer') })
        expect(created.status, await created.clone().text()).toBe(201)
        const controller = new AbortController()
        const follow = new SseStream(
          await fetch(`${api.url}${terminal(name, 'echo')}/follow?attachment=typist-${name}`, {
            headers: { authorization: `Bearer ${token}` },
            signal: controller.signal,
          }),
          controller,
        )
        try {
          expect(follow.response.status).toBe(200)
          await follow.until((m) => m.event === 'snapshot')
          let printed = ''
          const echoed = follow.until((m) => {
            if (m.event === 'output') printed += Buffer.from((m.data as { data: string }).data, 'base64').toString()
            return printed.includes(`got:hello-${name}`)
          })
          const typed = await call('POST', `${terminal(name, 'echo')}/input`, `hello-${name}\r`, {
            'termkeep-attachment': `typist-${name}`,
          })
          expect(typed.status, await typed.clone().text()).toBe(204)
          await echoed
        } finally {
          follow.close()
        }
        const shown = await waitFor(
          async () => {
            const d = await display(name, 'echo')
            return d?.text.includes(`got:hello-${name}`) && d
          },
          15_000,
          `${name}'s display`,
        )
        expect(shown.revision).toBeGreaterThan(0)
      }),
    )
  }, 60_000)

  it('kill -9 of one host under load: the others lose no byte and no display revision; its stored data is served; back, it adopts its terminals', async () => {
    const files = Object.fromEntries(NAMES.map((n) => [n, join(work, `flood-${n}.txt`)])) as Record<Name, string>
    const command = (name: Name) =>
      `for i in $(seq 1 ${FLOOD_BURSTS}); do head -c 100000 /dev/urandom | base64 -w 120; sleep 0.35; done | tee ${files[name]}`
    for (const name of NAMES) {
      const created = await call('PUT', terminal(name, 'flood'), { cols: 120, rows: 30, command: command(name) })
      expect(created.status, await created.clone().text()).toBe(201)
    }
    // Every revision the API serves while they flood, per host: each poll's (revision, sequence).
    const seen = Object.fromEntries(NAMES.map((n) => [n, [] as { revision: number; sequence: number }[]])) as Record<
      Name,
      { revision: number; sequence: number }[]
    >
    let polling = true
    const poll = (name: Name) =>
      (async () => {
        while (polling) {
          const d = await display(name, 'flood')
          if (d) seen[name].push({ revision: d.revision, sequence: d.sequence })
          await new Promise((r) => setTimeout(r, 100))
        }
      })()
    const pollers = (['alpha', 'gamma'] as const).map(poll)

    // Mid-flood: beta's sidecar is killed (its keeper goes on recording).
    await waitFor(async () => readFileSync(files.beta, 'utf8').length > 100_000, 10_000, "beta's flood to be under way")
    await hosts.beta.sidecar.kill()
    for (const [method, path, body] of [
      ['POST', `${terminal('beta', 'echo')}/input`, 'x'],
      ['GET', `${terminal('beta', 'flood')}/output?after=0`, undefined],
      ['PUT', terminal('beta', 'new'), { cols: 80, rows: 24 }],
    ] as const) {
      const response = await call(method, path, body, { 'termkeep-attachment': 'typist-beta' })
      expect(response.status, path).toBe(503)
      expect(((await response.json()) as any).error).toMatchObject({ code: 'host/unavailable', host: hosts.beta.id, hostName: 'beta' })
    }
    expect((await call('GET', '/v1/sessions/ses-beta')).status).toBe(200)
    const listed = (await (await call('GET', '/v1/sessions/ses-beta/terminals')).json()) as { terminals: { id: string }[] }
    expect(listed.terminals.map((t) => t.id).sort()).toEqual(['echo', 'flood'])
    expect((await display('beta', 'echo'))?.text).toContain('got:hello-beta')

    // The others flood to the end: every byte as the program wrote it (the PTY's \n → \r\n).
    for (const name of ['alpha', 'gamma'] as const) {
      const { bytes } = await waitFor(
        async () => {
          const read = await journal(name, 'flood')
          return read.closed && read
        },
        30_000,
        `${name}'s flood to end`,
      )
      const written = readFileSync(files[name], 'latin1').replace(/\n/g, '\r\n')
      expect(written.length).toBeGreaterThan(FLOOD_BURSTS * 130_000)
      expect(bytes.toString('latin1') === written, `${name}'s journal is the program's output byte for byte`).toBe(true)
    }
    polling = false
    await Promise.all(pollers)
    for (const name of ['alpha', 'gamma'] as const) {
      const { last } = await journal(name, 'flood')
      // The last revision covers the last byte; stored revisions are consecutive, each newer
      // than the one before; what the API served moved forward only, one sequence per revision.
      const final = await waitFor(
        async () => {
          const d = await display(name, 'flood')
          return d && d.sequence === last && d
        },
        10_000,
        `${name}'s display to cover its last byte`,
      )
      const stored = await storage.db
        .select({ revision: displayRevisions.revision, sequence: displayRevisions.sequence })
        .from(displayRevisions)
        .where(and(eq(displayRevisions.sessionId, `ses-${name}`), eq(displayRevisions.terminalId, 'flood')))
        .orderBy(asc(displayRevisions.revision))
      expect(stored.length).toBeGreaterThan(0)
      expect(stored.at(-1)!.revision).toBeGreaterThanOrEqual(final.revision)
      expect(stored.at(-1)!.sequence).toBe(last)
      stored.forEach((row, i) => {
        if (i === 0) return
        expect(row.revision).toBe(stored[i - 1]!.revision + 1)
        expect(row.sequence).toBeGreaterThan(stored[i - 1]!.sequence)
      })
      const polled = seen[name]
      expect(stored.length, `${name} settled several revisions while flooding`).toBeGreaterThan(1)
      expect(polled.length, `${name}'s display polled while it flooded`).toBeGreaterThan(1)
      polled.forEach((p, i) => {
        if (i === 0) return
        const before = polled[i - 1]!
        expect(p.revision).toBeGreaterThanOrEqual(before.revision)
        if (p.revision === before.revision) expect(p.sequence).toBe(before.sequence)
        else expect(p.sequence).toBeGreaterThan(before.sequence)
      })
    }

    // Back: beta's sidecar adopts what its keeper kept: the flood recorded whole, the echoer typing.
    await startHost('beta')
    await new Promise((r) => setTimeout(r, 1_100)) // the API's hosts cache (HOSTS_CACHE_MS)
    const beta = await waitFor(
      async () => {
        const read = await journal('beta', 'flood')
        return read.closed && read
      },
      30_000,
      "beta's flood, adopted",
    )
    expect(beta.bytes.toString('latin1') === readFileSync(files.beta, 'latin1').replace(/\n/g, '\r\n')).toBe(true)
    const typed = await call('POST', `${terminal('beta', 'echo')}/keys`, { text: 'adopted\n' }, { 'termkeep-attachment': 'typist-beta' })
    expect(typed.status, await typed.clone().text()).toBe(200)
    await waitFor(async () => (await journal('beta', 'echo')).bytes.toString().includes('got:adopted'), 15_000, "beta's echoer")
  }, 90_000)

  it("rotates one host's secret: same id, the others untouched, the old secret opens nothing", async () => {
    const env = { TERMKEEP_FLEET_SECRET: FLEET_SECRET, DATABASE_URL: sqld.url }
    const old = hosts.gamma.secret
    const rotated = await runCli(['hosts', 'rotate', hosts.gamma.id], env)
    expect(rotated.code, rotated.stderr).toBe(0)
    const fresh = rotated.stdout.trim()
    expect(fresh).toMatch(/^hs_[\w-]{43}$/)
    expect(fresh).not.toBe(old)
    const [current, beta, unknown] = await Promise.all([
      runCli(['hosts', 'secret', hosts.gamma.id], env),
      runCli(['hosts', 'secret', hosts.beta.id], env),
      runCli(['hosts', 'rotate', 'host-nobody'], env),
    ])
    expect(current.stdout.trim()).toBe(fresh)
    expect(beta.stdout.trim()).toBe(hosts.beta.secret)
    expect([unknown.code, unknown.stderr]).toEqual([1, expect.stringContaining('no host host-nobody')])

    await new Promise((r) => setTimeout(r, 1_100)) // the API's hosts cache (HOSTS_CACHE_MS)
    const { hosts: listed } = (await (await call('GET', '/v1/hosts')).json()) as { hosts: any[] }
    listed.sort((x, y) => x.name.localeCompare(y.name))
    expect(listed.map((h) => [h.name, h.id, h.secretEpoch])).toEqual([
      ['alpha', hosts.alpha.id, 0],
      ['beta', hosts.beta.id, 0],
      ['gamma', hosts.gamma.id, 1],
    ])
    // The API already speaks the new secret; gamma still holds the old one, so it refuses.
    const live = (name: Name) => call('GET', `${terminal(name, 'echo')}/output?after=0&limit=1`)
    const refused = await live('gamma')
    expect(refused.status).toBe(503)
    expect(((await refused.json()) as any).error).toMatchObject({ code: 'host/unavailable', host: hosts.gamma.id })
    for (const name of ['alpha', 'beta'] as const) expect((await live(name)).status).toBe(200)

    // gamma restarted with its new secret: reached again (its terminal adopted); the old opens nothing.
    await hosts.gamma.sidecar.stop({ terminals: 'keep' })
    await startHost('gamma', fresh)
    await new Promise((r) => setTimeout(r, 1_100)) // its new URL, through the API's hosts cache
    const reached = await live('gamma')
    expect(reached.status, await reached.clone().text()).toBe(200)
    expect(((await (await call('GET', terminal('gamma', 'echo'))).json()) as any).state).toBe('running')
    const ask = async (secret: string) =>
      (await fetch(`${hosts.gamma.sidecar.url}${terminal('gamma', 'echo')}`, { headers: { authorization: `Bearer ${secret}` } })).status
    expect(await ask(old)).toBe(401)
    expect(await ask(fresh)).toBe(200)
    expect(hosts.gamma.sidecar.hostId).toBe(listed[2].id)
  }, 60_000)
})
