/**
 * Starting a run safely twice (docs/retrying.md): with an `Idempotency-Key`, a repeat of the same
 * request answers the run the first start started (200, not 201) and starts nothing; another
 * request under the key is 422; keys are per session and token. Through the API into a real
 * sidecar, including the case the key exists for: the first attempt got a 503 from a stalled
 * (SIGSTOPped) sidecar that started the run as it resumed, and the retry finds that run.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GRANTS } from '../../schema/grants.ts'
import { MAX_IDEMPOTENCY_KEY_CHARS } from '../../schema/limits.ts'
import { startHarness, type Harness } from '../api/harness.ts'
import { waitFor } from '../support/ports.ts'
import { AGENTS_ENV, prepare, runEvents } from './support.ts'

let h: Harness
let token: string
const RUNS = '/v1/sessions/s1/workflows'

beforeAll(async () => {
  h = await startHarness({ sidecarEnv: AGENTS_ENV })
  ;({ token } = await prepare(h))
}, 60_000)
afterAll(async () => {
  await h?.close()
})

function start(body: Record<string, unknown>, key?: string, as = token): Promise<Response> {
  return h.request('POST', RUNS, { token: as, body, headers: key === undefined ? {} : { 'idempotency-key': key } })
}

async function answer(response: Response): Promise<{ status: number; body: any }> {
  return { status: response.status, body: await response.json() }
}

/** Every run of the session (one page is plenty here). */
async function runIds(): Promise<string[]> {
  const list = (await (await h.request('GET', `${RUNS}?limit=100`, { token })).json()) as any
  return list.runs.map((run: any) => run.id)
}

describe('POST /v1/sessions/:sid/workflows with an Idempotency-Key', () => {
  it('answers a repeat with the run the first start started (200), once, also for concurrent repeats', async () => {
    const before = await runIds()
    const body = { script: 'return input.n * 2', input: { n: 21 } }
    const first = await answer(await start(body, 'start-1'))
    expect(first.status, JSON.stringify(first.body)).toBe(201)
    const repeat = await answer(await start(body, 'start-1'))
    expect(repeat.status).toBe(200)
    expect(repeat.body.run.id).toBe(first.body.run.id)
    // Two at once under a new key: one starts the run, the other waits for it and answers it.
    const both = await Promise.all([start(body, 'start-2'), start(body, 'start-2')].map(async (r) => answer(await r)))
    expect(both.map((b) => b.status).sort()).toEqual([200, 201])
    expect(both[0].body.run.id).toBe(both[1].body.run.id)
    // An omitted default is the same request as the default spelled out.
    expect((await start({ ...body, concurrency: 4 }, 'start-1')).status).toBe(200)
    const after = await runIds()
    expect(after.filter((id) => !before.includes(id)).sort()).toEqual([first.body.run.id, both[0].body.run.id].sort())
    const events = await runEvents(h, token, first.body.run.id)
    expect(events.filter((e) => e.event === 'workflow/start')).toHaveLength(1)
  })

  it('refuses the key with another request (422) and a malformed key (400), starting nothing', async () => {
    const body = { script: "return 'kept'" }
    const first = await answer(await start(body, 'start-3'))
    expect(first.status).toBe(201)
    const before = await runIds()
    for (const other of [{ script: "return 'other'" }, { ...body, input: 1 }, { ...body, concurrency: 2 }, { ...body, profile: 'stdin' }]) {
      const refused = await answer(await start(other, 'start-3'))
      expect(refused.status, JSON.stringify(other)).toBe(422)
      expect(refused.body.error).toMatchObject({ code: 'workflow/idempotency-key-reused', key: 'start-3', runId: first.body.run.id })
    }
    for (const key of ['has space', 'x'.repeat(MAX_IDEMPOTENCY_KEY_CHARS + 1), 'ünicode', '']) {
      const refused = await answer(await start(body, key))
      expect(refused.status, JSON.stringify(key)).toBe(400)
      expect(refused.body.error.code).toBe('request/invalid')
    }
    expect(await runIds()).toEqual(before)
  })

  it('keeps keys apart per token: the same key from another token starts its own run', async () => {
    const other = await h.token(GRANTS)
    const body = { script: 'return 1' }
    const mine = await answer(await start(body, 'start-4'))
    const theirs = await answer(await start(body, 'start-4', other))
    expect([mine.status, theirs.status]).toEqual([201, 201])
    expect(theirs.body.run.id).not.toBe(mine.body.run.id)
  })

  it('finds the run a stalled sidecar started after answering 503, and answers repeats while it does not answer', async () => {
    const before = await runIds()
    const body = { script: "log('started during the stall'); return 'once'" }
    process.kill(h.sidecar.pid, 'SIGSTOP')
    let first: { status: number; body: any }
    try {
      first = await answer(await start(body, 'stalled-1'))
    } finally {
      process.kill(h.sidecar.pid, 'SIGCONT')
    }
    // The sidecar did not answer in time: the outcome is unknown (it may start the run as it resumes).
    expect(first.status).toBe(503)
    expect(first.body.error.code).toBe('sidecar/unavailable')
    // As it resumes, the sidecar starts the run it was sent: it appears with no retry at all.
    const started = await waitFor(
      async () => {
        const ids = (await runIds()).filter((id) => !before.includes(id))
        return ids.length > 0 ? ids : undefined
      },
      30_000,
      'the run started by the resumed sidecar',
    )
    expect(started).toHaveLength(1)
    // So the client's retry under the same key answers that run instead of starting another.
    const retry = await answer(await start(body, 'stalled-1'))
    expect(retry.status, JSON.stringify(retry.body)).toBe(200)
    expect(retry.body.run.id).toBe(started[0])
    expect((await runIds()).filter((id) => !before.includes(id))).toEqual(started)
    const events = await runEvents(h, token, started[0])
    expect(events.filter((e) => e.event === 'workflow/log')).toHaveLength(1)

    // The key is kept with the run: a repeat is answered from the database, with the sidecar
    // stopped again (no answer from it at all).
    process.kill(h.sidecar.pid, 'SIGSTOP')
    try {
      const repeat = await answer(await start(body, 'stalled-1'))
      expect(repeat.status).toBe(200)
      expect(repeat.body.run).toMatchObject({ id: started[0], status: 'completed' })
    } finally {
      process.kill(h.sidecar.pid, 'SIGCONT')
    }
  })
})
