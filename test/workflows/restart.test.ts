/**
 * A sidecar killed (-9) in the middle of a run: its script process notices and dies, its members'
 * terminals go on in the keeper, and once a sidecar starts again the run reads as interrupted (its
 * log valid evidence with the open member's end missing) while the open member's terminal is
 * adopted, its agent still running; what a member left outside its terminal is ended. A sidecar
 * stopped gracefully leaves its runs the same way.
 */
import { readFileSync } from 'node:fs'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { checkRunLog } from '../../common/workflow-log.ts'
import { startHarness, type Harness } from '../api/harness.ts'
import { startSidecar, type RunningSidecar } from '../support/sidecar.ts'
import { AGENTS_ENV, alive, eventually, logged, prepare, processesOfRun, runEvents, startRun } from './support.ts'

let h: Harness
let token: string
let restarted: RunningSidecar | undefined

beforeAll(async () => {
  h = await startHarness({ sidecarEnv: AGENTS_ENV })
  ;({ token } = await prepare(h))
}, 60_000)
afterAll(async () => {
  await restarted?.stop()
  await h?.close()
})

it('a run whose sidecar was killed reads as interrupted after a restart', async () => {
  const finished = await startRun(h, token, { script: "log('done before'); return 'kept'" })
  await runEvents(h, token, finished.id)
  const started = await startRun(h, token, {
    script: "log('going'); return await parallel(['slow [setsid] [sleep:600000]', 'quick [result]'], (p) => agent(p))",
  })
  const rid = started.id
  const before = await runEvents(h, token, rid, (e) => e.some((x) => x.event === 'workflow/agent-end'))
  const [row] = (await h.storage.client.execute({ sql: 'SELECT pid FROM workflow_runs WHERE id = ?', args: [rid] })).rows
  const scriptPid = Number(row.pid)
  expect(alive(scriptPid)).toBe(true)
  expect(processesOfRun(rid).length).toBeGreaterThan(0)

  const members = processesOfRun(rid)
  await h.sidecar.kill()
  // Its script process has a watchdog for this; the members' terminals are the keeper's, and the
  // `setsid sleep 601` the slow one left outside its terminal's session lives on too.
  expect(await eventually(() => !alive(scriptPid))).toBe(true)
  expect(members.every(alive)).toBe(true)
  const leftover = processesOfRun(rid).find((pid) => readFileSync(`/proc/${pid}/cmdline`, 'latin1').split('\0').join(' ') === 'sleep 601 ')!
  expect(leftover).toBeGreaterThan(0)
  const inTerminals = processesOfRun(rid).filter((pid) => pid !== leftover)
  expect(inTerminals.length).toBeGreaterThan(0)
  // A finished run replays from the database with no sidecar at all.
  const replayed = await runEvents(h, token, finished.id)
  expect(replayed.map((e) => e.event)).toEqual(['workflow/start', 'workflow/log', 'workflow/end'])
  // Nothing could write the end: the database still says running until a sidecar starts again.
  const stale = (await (await h.request('GET', `/v1/sessions/s1/workflows/${rid}`, { token })).json()) as any
  expect(stale.status).toBe('running')

  restarted = await startSidecar({
    dataDir: h.sidecar.dataDir,
    databaseUrl: h.sidecar.databaseUrl,
    secret: h.sidecar.secret,
    env: AGENTS_ENV,
  })
  // The new sidecar ended what the interrupted run's members left outside their terminals; what
  // runs in them (adopted, live) it left alone.
  expect(alive(leftover)).toBe(false)
  expect(processesOfRun(rid).sort()).toEqual([...inTerminals].sort())
  const detail = (await (await h.request('GET', `/v1/sessions/s1/workflows/${rid}`, { token })).json()) as any
  expect(detail).toMatchObject({ status: 'interrupted', result: null, log: { valid: true } })
  expect(detail.members.map((m: any) => [m.seq, m.state])).toEqual([
    [1, 'interrupted'],
    [2, 'completed'],
  ])
  // The stream replays everything and says why it ends without workflow/end.
  const events = await runEvents(h, token, rid)
  expect(events.at(-1)?.event).toBe('interrupted')
  expect(events.some((e) => e.event === 'workflow/end')).toBe(false)
  expect(logged(events).length).toBeGreaterThanOrEqual(logged(before).length)
  expect(checkRunLog(logged(events))).toEqual({ valid: true, ended: false, open: [1] })
  const { terminals } = (await (await h.request('GET', '/v1/sessions/s1/terminals', { token })).json()) as any
  const member = terminals.find((t: any) => t.workflow?.run === rid && t.workflow.seq === 1)
  expect([member.state, member.hostGeneration]).toEqual(['running', restarted.generation])
  expect(inTerminals.every(alive)).toBe(true)
  // Cancelling it now changes nothing and needs no sidecar.
  const cancel = await h.request('POST', `/v1/sessions/s1/workflows/${rid}/cancel`, { token, body: {} })
  expect(((await cancel.json()) as any).run.status).toBe('interrupted')
})

it("a sidecar stopped gracefully (SIGTERM) leaves its runs to read as interrupted, their members' terminals running", async () => {
  const current = restarted!
  // Start through the restarted sidecar: the harness's API client still points at the killed one.
  const response = await fetch(`${current.url}/v1/sessions/s1/workflows`, {
    method: 'POST',
    headers: { authorization: `Bearer ${current.secret}`, 'content-type': 'application/json', 'termkeep-principal': 'tok_none' },
    body: JSON.stringify({ script: "return await agent('long [sleep:600000]')" }),
  })
  expect(response.status).toBe(201)
  const { runId } = (await response.json()) as { runId: string }
  await runEvents(h, token, runId, (e) => e.some((x) => x.event === 'workflow/agent-start'))
  const [row] = (await h.storage.client.execute({ sql: 'SELECT pid FROM workflow_runs WHERE id = ?', args: [runId] })).rows
  const members = processesOfRun(runId)
  expect(members.length).toBeGreaterThan(0)
  await current.stop({ terminals: 'keep' })
  expect(alive(Number(row.pid))).toBe(false)
  expect(members.every(alive)).toBe(true)
  restarted = await startSidecar({ dataDir: current.dataDir, databaseUrl: current.databaseUrl, secret: current.secret, env: AGENTS_ENV })
  const detail = (await (await h.request('GET', `/v1/sessions/s1/workflows/${runId}`, { token })).json()) as any
  expect(detail).toMatchObject({ status: 'interrupted', log: { valid: true } })
  expect(detail.members.map((m: any) => m.state)).toEqual(['interrupted'])
  expect(members.every(alive)).toBe(true)
})
