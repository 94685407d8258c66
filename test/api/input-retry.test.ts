/**
 * Retrying input safely (docs/retrying.md): a batch sent with an `Idempotency-Key` is typed at
 * most once however often it is sent, also when the first attempt got a 503 from a stalled
 * sidecar; different keys are different batches; a malformed key is a 400 and a key reused for
 * other bytes a 422, neither typing anything. Through the API into a real sidecar and a real
 * shell: "typed" is counted as a command's output in the journal (the shell's echo of the typed
 * line shows the unexpanded `$((…))`, so only an executed line prints the marker).
 */
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GRANTS } from '../../schema/grants.ts'
import { MAX_IDEMPOTENCY_KEY_CHARS } from '../../schema/limits.ts'
import { waitFor } from '../support/ports.ts'
import { outputText, startHarness, type Harness } from './harness.ts'

let h: Harness
let token: string
let follower: ReadableStreamDefaultReader<Uint8Array>
const T = '/v1/sessions/s1/terminals/t1'

beforeAll(async () => {
  h = await startHarness()
  token = await h.token(GRANTS)
  const dir = join(h.dir, 'work')
  mkdirSync(dir)
  await h.request('POST', '/v1/sessions', { token, body: { id: 's1', cwd: realpathSync(dir) } })
  expect((await h.request('PUT', T, { token, body: { cols: 80, rows: 24 } })).status).toBe(201)
  // Attachment a1 controls input while this follow stays open.
  const follow = await h.request('GET', `${T}/follow?attachment=a1`, { token })
  expect(follow.status).toBe(200)
  follower = follow.body!.getReader()
  let text = ''
  while (!text.includes('event: snapshot')) text += new TextDecoder().decode((await follower.read()).value)
})
afterAll(async () => {
  await follower?.cancel().catch(() => {})
  await h?.close()
})

const output = () => outputText(h, token, T)

const count = (text: string, marker: string) => text.split(marker).length - 1

function type(line: string, key?: string): Promise<Response> {
  const headers: Record<string, string> = { 'content-type': 'application/octet-stream', 'termkeep-attachment': 'a1' }
  if (key !== undefined) headers['idempotency-key'] = key
  return h.request('POST', `${T}/input`, { token, body: line, headers })
}

/** A command printing `marker` (written as prefix, $((a+b)), suffix so its echo does not). */
const command = (prefix: string, a: number, b: number) => ({ line: `echo ${prefix}$((${a}+${b}))\r`, marker: `${prefix}${a + b}` })

let sentinels = 0
/** Types a last command and waits for its output: input is ordered, so all before it has run. */
async function settled(): Promise<string> {
  const { line, marker } = command(`END${++sentinels}-`, 40, 2)
  expect((await type(line)).status).toBe(204)
  let text = ''
  await waitFor(async () => count((text = await output()), marker) > 0, 20_000, `output of ${line.trim()}`)
  return text
}

describe('input with an Idempotency-Key', () => {
  it('types a batch sent twice under one key once, and batches under different keys each time', async () => {
    const once = command('ONCE-', 10, 1)
    const first = await type(once.line, 'batch-1')
    const repeat = await type(once.line, 'batch-1')
    expect([first.status, repeat.status]).toEqual([204, 204])
    const twice = command('TWICE-', 20, 2)
    expect((await type(twice.line, 'batch-2')).status).toBe(204)
    expect((await type(twice.line, 'batch-3')).status).toBe(204)
    const text = await settled()
    expect(count(text, once.marker)).toBe(1)
    expect(count(text, twice.marker)).toBe(2)
  })

  it('refuses a malformed key (400) and a key reused for other input (422), typing neither', async () => {
    const refused = command('REFUSED-', 30, 3)
    for (const key of ['has space', 'x'.repeat(MAX_IDEMPOTENCY_KEY_CHARS + 1), 'ünicode', '']) {
      const response = await type(refused.line, key)
      expect(response.status, JSON.stringify(key)).toBe(400)
      expect(((await response.json()) as any).error.code).toBe('request/invalid')
    }
    expect((await type(command('KEPT-', 40, 4).line, 'reused')).status).toBe(204)
    const reused = await type(refused.line, 'reused')
    expect(reused.status).toBe(422)
    expect(((await reused.json()) as any).error).toMatchObject({ code: 'terminal/idempotency-key-reused', key: 'reused' })
    expect((await type('x'.repeat(MAX_IDEMPOTENCY_KEY_CHARS), 'x'.repeat(MAX_IDEMPOTENCY_KEY_CHARS))).status).toBe(204)
    expect((await type('\x15')).status).toBe(204) // Ctrl-U: the line of x's is not run
    const text = await settled()
    expect(count(text, refused.marker)).toBe(0)
    expect(count(text, 'KEPT-44')).toBe(1)
  })

  it('types a batch once when its first attempt got a 503 from a stalled sidecar and it was retried', async () => {
    const batch = command('STALLED-', 50, 5)
    process.kill(h.sidecar.pid, 'SIGSTOP')
    let first: Response
    try {
      first = await type(batch.line, 'stalled-1')
    } finally {
      process.kill(h.sidecar.pid, 'SIGCONT')
    }
    // The sidecar did not answer: the outcome is unknown (it may type the batch as it resumes).
    expect(first.status).toBe(503)
    expect(((await first.json()) as any).error.code).toBe('sidecar/unavailable')
    // So the client retries with the same key, until the sidecar answers.
    let retry: Response | undefined
    await waitFor(async () => (retry = await type(batch.line, 'stalled-1')).status !== 503, 20_000, 'the retry answered')
    expect(retry!.status).toBe(204)
    expect(count(await settled(), batch.marker)).toBe(1)
  })
})
