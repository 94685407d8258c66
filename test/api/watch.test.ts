/**
 * GET /v1/workspaces/watch: baseline then ordered increments from the event log, resume with
 * Last-Event-ID without loss, heartbeats, scope filtering, and several API instances on one
 * database (embedded file and the real sqld server).
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import type { Hono } from 'hono'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { createToken, revokeToken } from '../../storage/tokens.ts'
import { createApp } from '../../api/app.ts'
import type { AppEnv } from '../../api/deps.ts'
import { REGISTRY_EVENTS_KEPT } from '../../schema/limits.ts'
import { startSqld, type RunningSqld } from '../support/sqld.ts'
import { json, readEvents, send, startHarness, type Harness, type SseMessage } from './harness.ts'

let n = 0
function freshDir(h: Harness, name: string): string {
  const dir = join(h.dir, `w${++n}`, name)
  mkdirSync(dir, { recursive: true })
  return realpathSync(dir)
}

function watch(app: Hono<AppEnv>, token: string, lastEventId?: string, signal?: AbortSignal) {
  return send(app, 'GET', '/v1/workspaces/watch', { token, headers: lastEventId ? { 'last-event-id': lastEventId } : {}, signal })
}

const named = (events: SseMessage[]) => events.filter((e) => e.event !== ':')

function suite(label: string, open: () => Promise<{ h: Harness; stop?: () => Promise<void> }>) {
  describe(label, () => {
    let h: Harness
    let stop: (() => Promise<void>) | undefined
    let token: string
    beforeAll(async () => {
      ;({ h, stop } = await open())
      token = await h.token(['workspaces:read', 'workspaces:write', 'sessions:write'])
    })
    afterAll(async () => {
      await h?.close()
      await stop?.()
    })

    const post = (path: string, body: unknown) => h.request('POST', path, { token, body }).then((r) => r.json() as Promise<any>)

    it('sends a baseline, then increments in order with id = sequence, and resumes after Last-Event-ID', async () => {
      const existing = await post('/v1/workspaces', { path: freshDir(h, 'pre') })
      const stream = await watch(h.app, token)
      expect(stream.status).toBe(200)
      expect(stream.headers.get('content-type')).toMatch(/^text\/event-stream/)
      // Mutations start once the baseline is here, so none of them can land in it.
      const mutate = async () => {
        const dir = freshDir(h, 'live')
        const ws = (await post('/v1/workspaces', { path: dir })).workspace
        await h.request('PATCH', `/v1/workspaces/${ws.id}`, { token, body: { title: `live-${n}` } })
        await post('/v1/sessions', { id: `watch-s-${n}`, cwd: dir })
        await post(`/v1/sessions/watch-s-${n}/archive`, {})
        await h.request('DELETE', `/v1/workspaces/${ws.id}`, { token })
        return ws
      }
      let mutations: Promise<{ id: string }> | undefined
      const events = named(
        await readEvents(stream, (e) => {
          if (!mutations && e.some((x) => x.event === 'baseline')) mutations = mutate()
          return named(e).some((x) => x.event === 'remove')
        }),
      )
      const ws = await mutations!
      expect(events[0]!.event).toBe('baseline')
      expect(json(events[0]!).workspaces.map((w: any) => w.id)).toContain(existing.workspace.id)
      expect(events.slice(1).map((e) => e.event)).toEqual(['upsert', 'order', 'upsert', 'upsert', 'archived', 'remove'])
      const ids = events.map((e) => Number(e.id))
      expect(ids.every((id, i) => i === 0 || id > ids[i - 1]!)).toBe(true)
      expect(json(events[3]!).workspace.title).toBe(`live-${n}`)
      expect(json(events[4]!).workspace.sessionIds).toEqual([`watch-s-${n}`])
      expect(json(events[5]!).archivedSessionIds).toContain(`watch-s-${n}`)
      expect(json(events[6]!)).toEqual({ workspaceId: ws.id })

      // Resume from the middle: exactly the increments after that id, no baseline.
      const resumed = await watch(h.app, token, events[2]!.id)
      const again = named(await readEvents(resumed, (e) => named(e).length >= 4))
      expect(again.map((e) => e.id)).toEqual(events.slice(3).map((e) => e.id))
      expect(again.map((e) => e.data)).toEqual(events.slice(3).map((e) => e.data))
    })

    it('sees mutations made through another API instance, and heartbeats while idle', async () => {
      const second = await h.secondApp()
      try {
        const stream = await watch(second.app, token)
        // The mutation goes in through the first instance once a heartbeat followed the baseline.
        let later: Promise<{ id: string }> | undefined
        const events = await readEvents(stream, (e) => {
          const baselineAt = e.findIndex((x) => x.event === 'baseline')
          if (!later && baselineAt >= 0 && e.slice(baselineAt + 1).some((x) => x.event === ':')) {
            later = post('/v1/workspaces', { path: freshDir(h, 'elsewhere') }).then((r) => r.workspace)
          }
          return named(e).some((x) => x.event === 'upsert')
        })
        const ws = await later!
        const baselineAt = events.findIndex((e) => e.event === 'baseline')
        const upsertAt = events.findIndex((e) => e.event === 'upsert')
        expect(events.slice(baselineAt + 1, upsertAt).some((e) => e.event === ':')).toBe(true)
        expect(json(named(events).find((e) => e.event === 'upsert')!).workspace.id).toBe(ws.id)
      } finally {
        second.close()
      }
    })

    it('loses nothing across a reconnect while mutations continue', async () => {
      const first = await watch(h.app, token)
      const got = named(await readEvents(first, (e) => named(e).length >= 1))
      let cursor = got[0]!.id!
      const writer = (async () => {
        const made: string[] = []
        for (let i = 0; i < 8; i++) made.push((await post('/v1/workspaces', { path: freshDir(h, `burst${i}`) })).workspace.id)
        return made
      })()
      const seen: string[] = []
      // Reconnect repeatedly, two events at a time, while the writer runs.
      while (seen.length < 8) {
        const stream = await watch(h.app, token, cursor)
        const batch = named(await readEvents(stream, (e) => named(e).length >= 2))
        for (const e of batch) {
          if (e.event === 'upsert') seen.push(json(e).workspace.id)
          cursor = e.id!
        }
      }
      expect(seen).toEqual(await writer)
    })

    it('shows a session-scoped token only its own session ids', async () => {
      const dir = freshDir(h, 'scoped')
      await post('/v1/workspaces', { path: dir })
      await post('/v1/sessions', { id: `mine-${n}`, cwd: dir })
      await post('/v1/sessions', { id: `theirs-${n}`, cwd: dir })
      await post(`/v1/sessions/theirs-${n}/archive`, {})
      const scoped = await h.token(['workspaces:read'], [`mine-${n}`])
      const stream = await watch(h.app, scoped)
      const [baseline] = named(await readEvents(stream, (e) => named(e).length >= 1))
      const body = json(baseline!)
      const listed = body.workspaces.find((w: any) => w.path === dir)
      expect(listed.sessionIds).toEqual([`mine-${n}`])
      expect(body.archivedSessionIds).not.toContain(`theirs-${n}`)
      const list = (await (await h.request('GET', '/v1/workspaces', { token: scoped })).json()) as any
      expect(list.workspaces.find((w: any) => w.path === dir).sessionIds).toEqual([`mine-${n}`])
    })

    it('serializes concurrent creates from two instances: one workspace, one created', async () => {
      const second = await h.secondApp()
      try {
        const dir = freshDir(h, 'both')
        const responses = await Promise.all(
          [h.app, second.app, h.app, second.app].map((app) => send(app, 'POST', '/v1/workspaces', { token, body: { path: dir } })),
        )
        const bodies = (await Promise.all(responses.map((r) => r.json()))) as any[]
        expect(bodies.filter((b) => b.created).length).toBe(1)
        expect(new Set(bodies.map((b) => b.workspace.id)).size).toBe(1)
      } finally {
        second.close()
      }
    })

    it('can end a watch after a bounded number of polls; the reconnect resumes without loss', async () => {
      const bounded = createApp({ ...h.deps, tuning: { ...h.deps.tuning, registryWatchMaxPolls: 3 } })
      const first = named(await readEvents(await watch(bounded, token), () => false))
      expect(first[0]!.event).toBe('baseline')
      const made = (await post('/v1/workspaces', { path: freshDir(h, 'bounded') })).workspace
      const next = named(await readEvents(await watch(bounded, token, first.at(-1)!.id), (e) => named(e).some((x) => x.event === 'upsert')))
      expect(next[0]!.event).toBe('upsert')
      expect(json(next[0]!).workspace.id).toBe(made.id)
    })

    it('ends an open watch when its token is revoked', async () => {
      const { token: record, secret } = await createToken(h.storage.db, {
        name: 'short-lived',
        grants: ['workspaces:read'],
        sessions: 'all',
      })
      const stream = await watch(h.app, secret)
      const events = readEvents(stream, (e) => e.some((x) => x.event === 'error'))
      await new Promise((r) => setTimeout(r, 100))
      await revokeToken(h.storage.db, record.id)
      const error = (await events).find((e) => e.event === 'error')
      expect(json(error!).error.code).toBe('auth/invalid-token')
    })

    it('keeps the newest events only, and gives a watch resuming from before them a baseline', async () => {
      // A long history, written directly (10,000 mutations through the API would take minutes).
      await h.storage.client.execute(
        `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${REGISTRY_EVENTS_KEPT}) INSERT INTO registry_events (kind, payload, created_at) SELECT 'order', '{"workspaceIds":[]}', 0 FROM n`,
      )
      const [{ first }] = (await h.storage.client.execute('SELECT min(seq) AS first FROM registry_events')).rows as unknown as {
        first: number
      }[]
      await post('/v1/workspaces', { path: freshDir(h, 'prune') }) // a mutation prunes
      const [{ oldest, kept }] = (await h.storage.client.execute('SELECT min(seq) AS oldest, count(*) AS kept FROM registry_events'))
        .rows as unknown as { oldest: number; kept: number }[]
      expect(Number(kept)).toBe(REGISTRY_EVENTS_KEPT)
      expect(Number(oldest)).toBeGreaterThan(Number(first))
      // From before the kept window: increments are missing, so a fresh baseline.
      const stale = named(await readEvents(await watch(h.app, token, String(Number(first))), (e) => named(e).length >= 1))
      expect(stale[0]!.event).toBe('baseline')
      // From just before the oldest kept event: every increment is there, no baseline.
      const edge = named(await readEvents(await watch(h.app, token, String(Number(oldest) - 1)), (e) => named(e).length >= 1))
      expect(edge[0]!.event).not.toBe('baseline')
      expect(Number(edge[0]!.id)).toBe(Number(oldest))
    })

    it('refuses a malformed Last-Event-ID with a 400', async () => {
      const r = await watch(h.app, token, 'abc')
      expect(r.status).toBe(400)
      expect(((await r.json()) as any).error.code).toBe('request/invalid')
    })
  })
}

suite('embedded file database', async () => ({ h: await startHarness() }))

let sqld: RunningSqld
suite('real sqld (libSQL over HTTP)', async () => {
  sqld = await startSqld()
  return { h: await startHarness({ databaseUrl: sqld.url }), stop: () => sqld.stop() }
})
