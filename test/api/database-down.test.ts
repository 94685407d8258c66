/** With the libSQL server gone, requests fail as 503 `database/unavailable`, never a bare 500. */
import { afterAll, beforeAll, expect, it } from 'vitest'
import { GRANTS } from '../../schema/grants.ts'
import { startSqld, type RunningSqld } from '../support/sqld.ts'
import { json, readEvents, startHarness, type Harness } from './harness.ts'

let sqld: RunningSqld
let h: Harness

beforeAll(async () => {
  sqld = await startSqld()
  h = await startHarness({ databaseUrl: sqld.url })
})
afterAll(async () => {
  await h?.close()
  await sqld?.stop()
})

it('answers 503 database/unavailable once sqld is gone', async () => {
  const token = await h.token(GRANTS)
  expect((await h.request('GET', '/v1/workspaces', { token })).status).toBe(200)
  const watch = await h.request('GET', '/v1/workspaces/watch', { token })
  const opened = readEvents(watch, (e) => e.some((x) => x.event === 'error'))
  await sqld.stop()
  // An open watch ends with one typed error event.
  const events = await opened
  expect(json(events.find((e) => e.event === 'error')!).error.code).toBe('database/unavailable')
  for (const [method, path] of [
    ['GET', '/v1/workspaces'],
    ['GET', '/v1/tokens'],
    ['GET', '/v1/sessions/s1/terminals'],
  ] as const) {
    const response = await h.request(method, path, { token })
    expect(response.status, path).toBe(503)
    expect(((await response.json()) as any).error.code).toBe('database/unavailable')
  }
  const health = (await (await h.request('GET', '/v1/health')).json()) as any
  expect(health.database.reachable).toBe(false)
})
