/**
 * A busy sidecar is not a dead one: 200 watchOutput streams of one flooding terminal, relayed by
 * the real `termkeep serve` API, while other live routes are called all along. No 503
 * `sidecar/unavailable` on them, and every watcher gets every byte of the journal, in order, at
 * exact native sequences (each one a valid resume cursor).
 */
import { createHash } from 'node:crypto'
import { writeFileSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startServe, type ServedStack } from './support/serve.ts'
import { shellsFixture } from './support/terminals.ts'

const WATCHERS = Number(process.env.BUSY_WATCHERS ?? 200)
/** The bounded flood: `seq` lines, ~6.9 bytes each on the PTY (~4 MB; ~800 MB relayed in all). */
const FLOOD_LINES = Number(process.env.BUSY_FLOOD_LINES ?? 600_000)

const shells = shellsFixture({
  flood: `while [ ! -e "$FLOOD_GO" ]; do sleep 0.05; done; seq 1 ${FLOOD_LINES}; echo flood-done`,
})
const go = join(shells.dir, 'go')
const T = '/v1/sessions/busy/terminals/flood'
let stack: ServedStack

beforeAll(async () => {
  stack = await startServe({ TERMKEEP_SHELLS_FILE: shells.shellsFile, FLOOD_GO: go })
  expect((await stack.call('POST', '/v1/sessions', { id: 'busy', cwd: shells.dir })).status).toBe(201)
})
afterAll(async () => {
  await stack?.stop()
})

interface Watched {
  digest: string
  bytes: number
  /** [sequence, bytes delivered up to and including it] per data item. */
  cursors: Array<[number, number]>
  closedAt: number
  /** Every byte, for the one watcher that keeps them. */
  kept?: Buffer
}

/**
 * Opens a watchOutput stream over node:http and resolves once it answered; `done` resolves at
 * `closed` with what it received. Parsing stays cheap: 200 of these share the test's one thread.
 */
function watch(path: string, keep: boolean, headers: Record<string, string> = {}): Promise<{ done: Promise<Watched> }> {
  return new Promise((resolve, reject) => {
    const outgoing = request(`${stack.url}${path}`, { headers: { authorization: `Bearer ${stack.token}`, ...headers } })
    outgoing.once('error', reject)
    outgoing.once('response', (response) => {
      if (response.statusCode !== 200) return reject(new Error(`watch answered ${response.statusCode}`))
      const hash = createHash('sha256')
      const kept: Buffer[] = []
      const watched: Watched = { digest: '', bytes: 0, cursors: [], closedAt: -1 }
      const chunks: string[] = []
      let pending = ''
      const done = new Promise<Watched>((finish, fail) => {
        response.setEncoding('latin1')
        response.on('data', (chunk: string) => {
          // Frames are ~1.4 MB: join a frame's chunks once, not on every chunk.
          chunks.push(chunk)
          if (!chunk.includes('\n')) return
          pending += chunks.splice(0).join('')
          let at: number
          let from = 0
          while ((at = pending.indexOf('\n\n', from)) >= 0) {
            const block = pending.slice(from, at)
            from = at + 2
            if (block.startsWith('event: data\n')) {
              const [, idLine, dataLine] = block.split('\n', 3) as [string, string, string]
              const id = Number(idLine.slice('id: '.length))
              const head = `data: {"sequence":${id},"data":"`
              if (!dataLine.startsWith(head)) return fail(new Error(`event id ${id} does not match its data: ${dataLine.slice(0, 60)}`))
              const bytes = Buffer.from(dataLine.slice(head.length, -2), 'base64')
              hash.update(bytes)
              if (keep) kept.push(bytes)
              watched.bytes += bytes.length
              watched.cursors.push([id, watched.bytes])
            } else if (block.startsWith('event: closed\n')) {
              watched.closedAt = JSON.parse(block.split('\n')[2]!.slice('data: '.length)).sequence
              watched.digest = hash.digest('hex')
              if (keep) watched.kept = Buffer.concat(kept)
              response.destroy()
              return finish(watched)
            }
          }
          pending = pending.slice(from)
        })
        response.once('close', () => fail(new Error(`the stream ended before closed, after ${watched.bytes} bytes`)))
      })
      resolve({ done })
    })
    outgoing.end()
  })
}

/** The journal's bytes from `after` to its end, through readOutput pages. */
async function readAll(after: number): Promise<Buffer> {
  const parts: Buffer[] = []
  for (let cursor = after; ; ) {
    const page = (await (await stack.call('GET', `${T}/output?after=${cursor}&limit=256`)).json()) as {
      items: Array<{ kind: string; data?: string }>
      next: number
    }
    for (const item of page.items) if (item.data) parts.push(Buffer.from(item.data, 'base64'))
    if (page.next === cursor) return Buffer.concat(parts)
    cursor = page.next
  }
}

describe('a busy sidecar', () => {
  it(`answers other routes without a 503 while ${WATCHERS} watchers drain one flooding terminal, and every watcher gets every byte`, async () => {
    expect((await stack.call('PUT', T, { cols: 120, rows: 30, shell: shells.path('flood') })).status).toBe(201)
    const watchers = await Promise.all(Array.from({ length: WATCHERS }, (_, i) => watch(`${T}/output/watch?after=0`, i === 0)))
    writeFileSync(go, '')
    const all = Promise.all(watchers.map((w) => w.done))
    let draining = true
    void all.finally(() => (draining = false)).catch(() => {})
    // Other live routes, one after another, until every watcher is through: quick ones (environment,
    // a terminal's info through the sidecar's readOutput) and slow ones (create, close).
    const calls: { route: string; status: number; error?: unknown }[] = []
    for (let n = 0; draining; n++) {
      const other = `/v1/sessions/busy/terminals/other-${n}`
      for (const [method, route, body] of [
        ['GET', '/v1/sessions/busy/terminal-environment'],
        ['GET', `${T}/output?after=0&limit=1`],
        ['PUT', other, { cols: 80, rows: 24 }],
        ['DELETE', other],
      ] as const) {
        const { status, body: answer } = await stack.callFresh(method, route, body)
        calls.push({ route: `${method} ${route}`, status, error: answer?.error })
      }
      const health = (await stack.callFresh('GET', '/v1/health')).body as { sidecar: { reachable: boolean; error?: string } }
      calls.push({ route: 'GET /v1/health', status: health.sidecar.reachable ? 200 : 503, error: health.sidecar.error })
    }
    const results = await all
    expect(calls.length).toBeGreaterThanOrEqual(5)
    expect(calls.filter((c) => c.status >= 500)).toEqual([])

    // Every watcher: the journal's bytes exactly, ending at its last sequence.
    const journal = await readAll(0)
    expect(journal.toString('latin1')).toContain('flood-done')
    const digest = createHash('sha256').update(journal).digest('hex')
    const last = results[0]!.closedAt
    for (const watched of results) {
      expect(watched.bytes).toBe(journal.length)
      expect(watched.digest).toBe(digest)
      expect(watched.closedAt).toBe(last)
      expect(watched.cursors.at(-1)![0]).toBe(last)
    }
    // Every sequence a watcher was given names one point of the journal: the same byte offset in
    // every watcher that saw it, strictly increasing.
    const offsets = new Map<number, number>()
    for (const { cursors } of results) {
      let previous = 0
      for (const [sequence, offset] of cursors) {
        expect(sequence).toBeGreaterThan(previous)
        previous = sequence
        const seen = offsets.get(sequence)
        if (seen === undefined) offsets.set(sequence, offset)
        else if (seen !== offset) expect({ sequence, offset }).toEqual({ sequence, offset: seen })
      }
    }
    // And it is an exact cursor: resuming there (Last-Event-ID) gives exactly the bytes after it.
    const kept = results[0]!.kept!
    const samples = results[0]!.cursors.filter((_, i, all) => i % Math.ceil(all.length / 4) === 1)
    for (const [sequence, offset] of samples) {
      const resumed = await (await watch(`${T}/output/watch?after=0`, true, { 'last-event-id': String(sequence) })).done
      expect(resumed.kept!.equals(kept.subarray(offset))).toBe(true)
    }
  }, 240_000)
})
