/**
 * What the workflow tests share: agent profiles running the fake agent (test/fixtures), a stack
 * with a session bound to a workspace, starting a run and reading its events to the end, and
 * finding a run's processes (every sub-agent and its children carry TERMKEEP_WORKFLOW_RUN).
 */
import { mkdirSync, readdirSync, readFileSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'vitest'
import { GRANTS } from '../../schema/grants.ts'
import { processStat } from '../../local/proc.ts'
import { checkRunLog, type LoggedEvent } from '../../common/workflow-log.ts'
import { json, readEvents, type Harness, type SseMessage } from '../api/harness.ts'

export const FAKE_AGENT = new URL('../fixtures/fake-agent.mjs', import.meta.url).pathname

export const AGENTS = {
  default: { command: [process.execPath, FAKE_AGENT], prompt: 'argument' },
  stdin: { command: [process.execPath, FAKE_AGENT, '--from=stdin'], prompt: 'stdin' },
  env: { command: [process.execPath, FAKE_AGENT, '--from=env'], prompt: 'env', env: { FAKE_AGENT_MODE: 'env' } },
}

export const AGENTS_ENV = { TERMKEEP_AGENTS: JSON.stringify(AGENTS) }

/** A workspace and a session `s1` bound to it; returns an all-grants token and the workspace. */
export async function prepare(h: Harness): Promise<{ token: string; workspace: string }> {
  const token = await h.token(GRANTS)
  const workspace = join(realpathSync(h.dir), 'ws')
  mkdirSync(workspace, { recursive: true })
  expect((await h.request('POST', '/v1/workspaces', { token, body: { path: workspace } })).status).toBe(201)
  expect((await h.request('POST', '/v1/sessions', { token, body: { id: 's1', cwd: workspace } })).status).toBe(201)
  return { token, workspace }
}

export async function startRun(h: Harness, token: string, body: Record<string, unknown>, session = 's1'): Promise<any> {
  const response = await h.request('POST', `/v1/sessions/${session}/workflows`, { token, body })
  const answer = (await response.json()) as any
  expect(response.status, JSON.stringify(answer)).toBe(201)
  return answer.run
}

export function eventsPath(rid: string, session = 's1'): string {
  return `/v1/sessions/${session}/workflows/${rid}/events`
}

/** Every event of the run until its end (or `until`), without heartbeats. */
export async function runEvents(
  h: Harness,
  token: string,
  rid: string,
  until?: (events: SseMessage[]) => boolean,
  timeoutMs = 60_000,
): Promise<SseMessage[]> {
  const response = await h.request('GET', eventsPath(rid), { token })
  expect(response.status).toBe(200)
  const stop = until ?? ((events) => events.some((e) => e.event === 'workflow/end' || e.event === 'interrupted'))
  const events = await readEvents(response, (events) => stop(events.filter((e) => e.event !== ':')), timeoutMs)
  return events.filter((e) => e.event !== ':')
}

/** The events as the invariant checker takes them. */
export function logged(events: SseMessage[]): LoggedEvent[] {
  return events.filter((e) => e.id !== undefined).map((e) => ({ sequence: Number(e.id), type: e.event, data: json(e) }))
}

/** Checks the run's whole log with the invariant checker, as streamed and as stored. */
export async function expectValidLog(h: Harness, token: string, rid: string, events: SseMessage[], ended = true): Promise<void> {
  const check = checkRunLog(logged(events))
  expect(check, JSON.stringify(check)).toMatchObject({ valid: true, ended })
  const detail = (await (await h.request('GET', `/v1/sessions/s1/workflows/${rid}`, { token })).json()) as any
  expect(detail.log).toEqual({ valid: true })
  expect(detail.lastSequence).toBe(Number(events.filter((e) => e.id !== undefined).at(-1)?.id))
}

export function endOf(events: SseMessage[]): any {
  const end = events.find((e) => e.event === 'workflow/end')
  expect(end, 'workflow/end').toBeDefined()
  return json(end!).result
}

/** Live pids whose environment names the run (its members and their children). */
export function processesOfRun(rid: string): number[] {
  const pids: number[] = []
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    try {
      if (processStat(Number(entry))?.zombie !== false) continue
      if (readFileSync(`/proc/${entry}/environ`, 'latin1').split('\0').includes(`TERMKEEP_WORKFLOW_RUN=${rid}`)) pids.push(Number(entry))
    } catch {
      // gone, or not ours
    }
  }
  return pids
}

export { alive } from '../support/serve.ts'

/** Polls `check` until it holds (or the time is up); for state another process moves. */
export async function eventually(check: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return true
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  return check()
}

/** Follows a terminal as `attachment` (which becomes its input controller) to read and type. */
export async function followTerminal(h: Harness, token: string, terminal: string, attachment = 'person') {
  const follow = await h.request('GET', `/v1/sessions/s1/terminals/${terminal}/follow?attachment=${attachment}`, { token })
  expect(follow.status).toBe(200)
  const reader = follow.body!.getReader()
  const decoder = new TextDecoder()
  let screen = ''
  let pending = ''
  return {
    /** Reads until the terminal has shown `text`. */
    async until(text: string): Promise<void> {
      while (!screen.includes(text)) {
        const { value, done } = await reader.read()
        if (done) throw new Error(`follow ended before "${text}"; saw ${JSON.stringify(screen)}`)
        pending += decoder.decode(value, { stream: true })
        let at: number
        while ((at = pending.indexOf('\n\n')) >= 0) {
          const block = pending.slice(0, at)
          pending = pending.slice(at + 2)
          const data = /^data: (.*)$/m.exec(block)?.[1]
          if (!data) continue
          const parsed = JSON.parse(data)
          if (typeof parsed.screen === 'string') screen += parsed.screen
          if (typeof parsed.data === 'string') screen += Buffer.from(parsed.data, 'base64').toString()
        }
      }
    },
    async type(text: string): Promise<void> {
      const response = await h.request('POST', `/v1/sessions/s1/terminals/${terminal}/input`, {
        token,
        body: text,
        headers: { 'termkeep-attachment': attachment },
      })
      expect(response.status).toBe(204)
    },
    close: () => reader.cancel().catch(() => {}),
  }
}
