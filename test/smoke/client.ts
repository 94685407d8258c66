/** HTTP helpers for the smoke checks: requests with a bearer token, SSE, sessions, terminals. */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { expect } from 'vitest'
import type { SmokeBackend } from './backend.ts'
import { readSse, type SseReader } from './sse.ts'

export const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` })

export function post(url: string, secret: string, body: unknown): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { ...bearer(secret), 'content-type': 'application/json' },
    body: JSON.stringify(body),
  })
}

/** Opens an SSE route and checks it is one before handing out the reader. */
export async function openSse(url: string, secret: string): Promise<SseReader> {
  const response = await fetch(url, { headers: { ...bearer(secret), accept: 'text/event-stream' } })
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
export async function until(reader: SseReader, match: (e: { event: string; data: string }) => boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const event = await reader.next(Math.max(1, deadline - Date.now()))
    if (match(event)) return event
  }
}

/** Records a session whose cwd is `dir` (it joins the workspace owning `dir`, if one does). */
export async function createSession(url: string, secret: string, dir: string): Promise<string> {
  const response = await post(`${url}/v1/sessions`, secret, { cwd: dir })
  if (response.status !== 201) throw new Error(`POST /v1/sessions answered ${response.status}: ${await response.text()}`)
  return ((await response.json()) as { session: { id: string } }).session.id
}

/**
 * A live terminal through the API: created with PUT, attached with follow (so this attachment is
 * the input controller), written to with POST input; `waitFor` reads the decoded output.
 */
export async function attachTerminal(url: string, secret: string, sid: string, tid: string) {
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
    /** Closes the follow (the client leaves); the terminal stays. */
    detach: () => follow.close(),
    async close() {
      await follow.close()
      await fetch(base, { method: 'DELETE', headers: bearer(secret) })
    },
  }
}

/** The text of an encoded display row: `[flags, style, content, style, content, ...]`. */
export function rowText(row: Array<number | string | string[]>): string {
  let text = ''
  for (let i = 2; i < row.length; i += 2) {
    const content = row[i]!
    text += typeof content === 'number' ? ' '.repeat(content) : Array.isArray(content) ? content.join('') : content
  }
  return text
}

/** A fresh directory under the backend's scratch area (canonical: the scratch root is realpath'd). */
export function scratch(backend: SmokeBackend, name: string): string {
  const dir = join(backend.workdir, name)
  mkdirSync(dir, { recursive: true })
  return dir
}
