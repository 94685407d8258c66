/**
 * The output journal through the real sidecar process over HTTP, with real PTYs: completeness at
 * exit, exact suffixes for every cursor, concurrent readers, a stalled reader's memory, and the
 * follow snapshot's cursor.
 */
import { existsSync, mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import headless from '@xterm/headless'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { MAX_OUTPUT_ITEM_BYTES } from '../../../schema/limits.ts'
import type { OutputItem } from '../../../schema/wire/output.ts'
import { waitFor } from '../../support/ports.ts'
import { startSidecar, type RunningSidecar } from '../../support/sidecar.ts'
import { insertSession, rssKiB, shellsFixture, SidecarHttp, type SseMessage, type SseStream } from '../../support/terminals.ts'
import { cursorHidden } from '../../../common/xterm/snapshot-suffix.ts'

const { Terminal } = headless
const work = mkdtempSync(join(tmpdir(), 'termkeep-output-'))
const crlf = (b: Buffer) => Buffer.from(b.toString('latin1').replace(/\n/g, '\r\n'), 'latin1')

// Deterministic inputs.
const oneMiB = Buffer.from(
  Array.from({ length: 16_384 }, (_, i) => `${String(i).padStart(6, '0')} ${'abcdefghijklmnopqrstuvwxyz0123456789'.slice(i % 30)}\n`).join(
    '',
  ),
)
writeFileSync(join(work, '1m.txt'), oneMiB)
const burstData = Buffer.from(
  Array.from({ length: 6000 }, (_, i) =>
    i % 7 === 0 ? `\x1b[3${i % 8}mcolour ${i}\x1b[0m ünïcødé\n` : `plain line ${i} ${'-'.repeat(i % 50)}\n`,
  ).join(''),
)
writeFileSync(join(work, 'burst.txt'), burstData)
const stallDone = join(work, 'stall.done')
const stallWarm = join(work, 'stall.warm')

const shells = shellsFixture({
  cat1m: `exec cat ${join(work, '1m.txt')}`,
  bursts: `stty -echo; echo ready; while read n; do [ "$n" = q ] && exit 0; head -c "$n" ${join(work, 'burst.txt')}; echo "<<done>>"; done`,
  flood: `stty -echo; echo ready; read x; exec seq 1 1500000`,
  // 20 MB to warm up (allocator high-water mark, the emulator's history filling), then 100 MB.
  stall: `stty -echo; echo ready; read x; yes 'termkeep stalled reader: a line of plain text' | head -c 20000000; touch ${stallWarm}; read y; yes 'termkeep stalled reader: a line of plain text' | head -c 100000000; touch ${stallDone}; exec sleep 1000`,
  cursor: `printf 'hello\\r\\n01234567890123456789'; printf '\\033[?25l'; exec sleep 1000`,
})

let sidecar: RunningSidecar
let http: SidecarHttp
const SID = 'sess-output'
const T = (tid: string) => `/v1/sessions/${SID}/terminals/${tid}`
const streams: SseStream[] = []

beforeAll(async () => {
  sidecar = await startSidecar({ env: { TERMKEEP_SHELLS_FILE: shells.shellsFile } })
  sidecar.child.stderr?.on('data', (chunk: Buffer) => process.stderr.write(`[sidecar] ${chunk}`))
  http = new SidecarHttp(sidecar)
  await insertSession(sidecar.databaseUrl, SID, work)
})
afterAll(async () => {
  for (const s of streams) s.close()
  await sidecar?.stop()
})

async function create(tid: string, shell: string, cols = 80, rows = 24): Promise<void> {
  const r = await http.json('PUT', T(tid), { json: { cols, rows, shell: shells.path(shell) } })
  expect(r.status).toBe(201)
}

async function control(tid: string): Promise<SseStream> {
  const s = await http.sse(`${T(tid)}/follow?attachment=ctl`)
  streams.push(s)
  await s.until((m) => m.event === 'snapshot')
  return s
}

const send = async (tid: string, text: string) =>
  expect((await http.fetch('POST', `${T(tid)}/input`, { body: text, headers: { 'termkeep-attachment': 'ctl' } })).status).toBe(204)

/** A stream as tokens: one per byte (latin1 char) and one per resize. */
type Tokens = string[]
const tokensOf = (item: OutputItem): Tokens =>
  item.kind === 'resize' ? [`\u0000R${item.cols}x${item.rows}`] : [...Buffer.from(item.data, 'base64').toString('latin1')]

/** readOutput paged to the end from `after`; checks every item's size. */
async function readAll(tid: string, after = 0): Promise<{ items: OutputItem[]; tokens: Tokens; end: string | null }> {
  const items: OutputItem[] = []
  let end: string | null = null
  for (let cursor = after; ; ) {
    const { status, body } = await http.json('GET', `${T(tid)}/output?after=${cursor}&limit=256`)
    expect(status).toBe(200)
    for (const item of body.items as OutputItem[]) {
      expect(JSON.stringify(item).length).toBeLessThanOrEqual(MAX_OUTPUT_ITEM_BYTES)
      expect(item.sequence).toBeGreaterThan(cursor)
      items.push(item)
      cursor = item.sequence
    }
    end = body.end
    if (body.items.length === 0) break
  }
  return { items, tokens: items.flatMap(tokensOf), end }
}

/** watchOutput until `closed`, as items. */
async function watchAll(
  tid: string,
  after: number,
  headers: Record<string, string> = {},
): Promise<{ items: OutputItem[]; begin: SseMessage }> {
  const stream = await http.sse(`${T(tid)}/output/watch?after=${after}`, headers)
  streams.push(stream)
  const begin = (await stream.next())!
  expect(begin.event).toBe('begin')
  const items: OutputItem[] = []
  for (;;) {
    const m = await stream.next()
    if (!m) throw new Error('watch ended without closed')
    if (m.event === 'closed') return { items, begin }
    expect(m.id).toBe(String(m.data.sequence))
    items.push(m.event === 'data' ? { kind: 'data', ...m.data } : { kind: 'resize', ...m.data })
  }
}

const bytesOf = (items: OutputItem[]) => Buffer.concat(items.flatMap((i) => (i.kind === 'data' ? [Buffer.from(i.data, 'base64')] : [])))

describe('completeness at exit', () => {
  it('journals every byte of `cat` of a 1 MB file as the whole command, 30 times out of 30', async () => {
    const expected = crlf(oneMiB)
    const short: number[] = []
    for (let run = 0; run < 30; run++) {
      const tid = `cat-${run}`
      await create(tid, 'cat1m', 120, 40)
      const { items } = await watchAll(tid, 0)
      const got = bytesOf(items)
      if (!got.equals(expected)) {
        short.push(expected.length - got.length)
        let at = 0
        while (at < got.length && got[at] === expected[at]) at++
        console.log(
          `run ${run}: ${got.length} bytes vs ${expected.length}; first difference at ${at}: got ${JSON.stringify(got.subarray(at, at + 60).toString('latin1'))} expected ${JSON.stringify(expected.subarray(at, at + 60).toString('latin1'))}; items ${items.map((i) => i.sequence).join(',')}`,
        )
      }
      await http.json('DELETE', T(tid))
    }
    expect(short).toEqual([])
  })
})

describe('exact suffixes', () => {
  it('gives every native cursor exactly the following bytes and resizes, within the item budget', async () => {
    await create('bursts', 'bursts')
    await control('bursts')
    const markers = async (n: number) =>
      waitFor(
        async () =>
          bytesOf((await readAll('bursts')).items)
            .toString('latin1')
            .split('<<done>>').length > n,
        20_000,
        `burst ${n}`,
      )
    const resize = async (cols: number, rows: number) =>
      expect(
        (await http.json('POST', `${T('bursts')}/resize`, { json: { cols, rows }, headers: { 'termkeep-attachment': 'ctl' } })).status,
      ).toBe(200)
    await waitFor(async () => bytesOf((await readAll('bursts')).items).includes('ready'), 10_000, 'ready')
    await send('bursts', '3000\n')
    await markers(1)
    await resize(100, 30)
    await send('bursts', '200000\n')
    await markers(2)
    await resize(60, 20)
    await resize(61, 20)
    await send('bursts', '70\n')
    await markers(3)
    await send('bursts', 'q\n')
    await waitFor(async () => (await readAll('bursts')).end === 'closed', 10_000, 'EOF')

    // The whole stream is exactly what the script printed, with the resizes where they happened.
    const done = crlf(Buffer.from('<<done>>\n'))
    const expectedTokens: Tokens = [
      ...crlf(Buffer.from('ready\n')).toString('latin1'),
      ...Buffer.concat([crlf(burstData.subarray(0, 3000)), done]).toString('latin1'),
      '\u0000R100x30',
      ...Buffer.concat([crlf(burstData.subarray(0, 200000)), done]).toString('latin1'),
      '\u0000R60x20',
      '\u0000R61x20',
      ...Buffer.concat([crlf(burstData.subarray(0, 70)), done]).toString('latin1'),
    ]
    const whole = await readAll('bursts', 0)
    expect(whole.tokens.length).toBe(expectedTokens.length)
    expect(whole.tokens.join('') === expectedTokens.join('')).toBe(true)
    const last = whole.items.at(-1)!.sequence
    // Coalescing happened, so some cursors below sit inside delivered batches.
    const sequences = [0, ...whole.items.map((i) => i.sequence)]
    expect(sequences.some((s, i) => i > 0 && s - sequences[i - 1] > 1)).toBe(true)

    let previous = whole.tokens.length + 1
    for (let after = 0; after <= last; after++) {
      const { tokens, end } = await readAll('bursts', after)
      expect(end).toBe('closed')
      expect(tokens.length).toBeLessThan(previous) // each native record is one step
      expect(tokens.join('') === whole.tokens.slice(whole.tokens.length - tokens.length).join('')).toBe(true)
      previous = tokens.length
    }
    expect(previous).toBe(0)

    // watchOutput agrees with readOutput, from 0 (with initialSize), from inside a batch, and via
    // Last-Event-ID.
    const fromZero = await watchAll('bursts', 0)
    expect(fromZero.begin.data).toEqual({ initialSize: { cols: 80, rows: 24 } })
    expect(fromZero.items.flatMap(tokensOf).join('') === whole.tokens.join('')).toBe(true)
    const inside = sequences.find((s, i) => i > 0 && s - sequences[i - 1] > 1)! - 1
    const mid = await watchAll('bursts', inside)
    expect(mid.begin.data).toEqual({})
    expect(mid.items.flatMap(tokensOf)).toEqual((await readAll('bursts', inside)).tokens)
    const resumed = await watchAll('bursts', 0, { 'last-event-id': String(inside) })
    expect(resumed.items).toEqual(mid.items)
  })
})

describe('concurrent readers', () => {
  it('gives readers that join before, during and mid-way the same bytes without gap or duplicate', async () => {
    const expected = Buffer.concat([
      crlf(Buffer.from('ready\n')),
      crlf(Buffer.from(Array.from({ length: 1_500_000 }, (_, i) => `${i + 1}\n`).join(''))),
    ])
    await create('flood', 'flood')
    const ctl = await control('flood')
    await waitFor(async () => bytesOf((await readAll('flood')).items).includes('ready'), 10_000, 'ready')
    const early = watchAll('flood', 0)
    await send('flood', 'go\n')
    // Some output, in several records (a page stops at about 1 MiB, however big the records).
    const dataBytes = (items: OutputItem[]) => items.reduce((n, i) => n + (i.kind === 'data' ? Buffer.from(i.data, 'base64').length : 0), 0)
    await waitFor(
      async () => dataBytes((await http.json('GET', `${T('flood')}/output?after=0&limit=50`)).body.items) > 512 * 1024,
      20_000,
      'some output',
    )
    const late = watchAll('flood', 0)
    const { body } = await http.json('GET', `${T('flood')}/output?after=0&limit=3`)
    const midway = watchAll('flood', body.next)
    const [a, b, c] = await Promise.all([early, late, midway])
    expect(bytesOf(a.items).equals(expected)).toBe(true)
    expect(bytesOf(b.items).equals(expected)).toBe(true)
    expect(bytesOf(c.items).equals(bytesOf((await readAll('flood', body.next)).items))).toBe(true)
    // The follower saw the same bytes after its snapshot.
    const followed: Buffer[] = []
    for (let m = await ctl.next(); m && !(m.event === 'state' && m.data.info.state === 'exited'); m = await ctl.next()) {
      if (m.event === 'output') followed.push(Buffer.from(m.data.data, 'base64'))
    }
    expect(expected.subarray(expected.length - Buffer.concat(followed).length).equals(Buffer.concat(followed))).toBe(true)
    await http.json('DELETE', T('flood'))
  })
})

describe('a stalled reader', () => {
  it('does not make the sidecar buffer 100 MB of output in memory', async () => {
    // A sidecar of its own, so earlier tests' heap does not hide growth.
    const own = await startSidecar({ env: { TERMKEEP_SHELLS_FILE: shells.shellsFile } })
    const ownHttp = new SidecarHttp(own)
    const P = `/v1/sessions/${SID}/terminals/stall`
    try {
      await insertSession(own.databaseUrl, SID, work)
      expect((await ownHttp.json('PUT', P, { json: { cols: 80, rows: 24, shell: shells.path('stall') } })).status).toBe(201)
      const ctl = await ownHttp.sse(`${P}/follow?attachment=ctl`) // never read past the snapshot: a second stalled reader
      streams.push(ctl)
      await ctl.until((m) => m.event === 'snapshot')
      await waitFor(async () => (await ownHttp.json('GET', `${P}/output?after=0`)).body.items.length > 0, 10_000, 'ready')
      const stalled = await ownHttp.sse(`${P}/output/watch?after=0`)
      streams.push(stalled)
      const go = async () =>
        expect((await ownHttp.fetch('POST', `${P}/input`, { body: 'go\n', headers: { 'termkeep-attachment': 'ctl' } })).status).toBe(204)
      await go()
      await waitFor(async () => existsSync(stallWarm), 120_000, 'warm-up output')
      await new Promise((resolve) => setTimeout(resolve, 2000)) // let the emulator catch up
      const before = rssKiB(own.pid)
      let peak = before
      await go()
      await waitFor(
        async () => {
          peak = Math.max(peak, rssKiB(own.pid))
          return existsSync(stallDone)
        },
        120_000,
        '100 MB of output',
      )
      await new Promise((resolve) => setTimeout(resolve, 2000))
      peak = Math.max(peak, rssKiB(own.pid))
      const growthMiB = (peak - before) / 1024
      console.log(
        `sidecar RSS ${Math.round(before / 1024)} MiB → peak ${Math.round(peak / 1024)} MiB (+${growthMiB.toFixed(1)} MiB) over 100 MB of output`,
      )
      // Memory must not follow the output: buffering for the stalled readers would add ≥ 100 MB.
      // (52 MiB was seen with the emulator far behind on a loaded machine; 40 was too tight.)
      expect(growthMiB).toBeLessThan(70)
      // The stalled reader is intact and starts at the beginning.
      const first = await stalled.until((m) => m.event === 'data')
      expect(first.data.sequence).toBe(1)
    } finally {
      await own.stop()
    }
  })
})

describe('follow snapshot', () => {
  it('lands a fresh terminal on the exact cursor position and visibility', async () => {
    await create('cursor', 'cursor', 20, 5)
    const raw = await waitFor(
      async () => {
        const bytes = bytesOf((await readAll('cursor')).items)
        return bytes.toString('latin1').endsWith('\x1b[?25l') ? bytes : undefined
      },
      10_000,
      'output',
    )
    const last = (await readAll('cursor')).items.at(-1)!.sequence
    // The emulator catches up asynchronously; a follow states which sequence its snapshot shows.
    const snapshot = await waitFor(
      async () => {
        const s = await http.sse(`${T('cursor')}/follow?attachment=look`)
        const m = await s.until((x) => x.event === 'snapshot')
        s.close()
        return m.data.sequence === last ? m : undefined
      },
      10_000,
      'caught-up snapshot',
    )
    const write = (t: InstanceType<typeof Terminal>, data: string | Uint8Array) => new Promise<void>((r) => t.write(data, r))
    const direct = new Terminal({ cols: 20, rows: 5, allowProposedApi: true })
    await write(direct, raw)
    const restored = new Terminal({ cols: snapshot.data.info.cols, rows: snapshot.data.info.rows, allowProposedApi: true })
    await write(restored, snapshot.data.screen)
    expect(direct.buffer.active.cursorX).toBe(20) // wrap pending after a full row: the hard case
    expect([restored.buffer.active.cursorX, restored.buffer.active.cursorY]).toEqual([
      direct.buffer.active.cursorX,
      direct.buffer.active.cursorY,
    ])
    expect(cursorHidden(restored)).toBe(true)
    for (let y = 0; y < 5; y++) {
      expect(restored.buffer.active.getLine(y)!.translateToString(true)).toBe(direct.buffer.active.getLine(y)!.translateToString(true))
    }
    // And the next character lands where it would have on the original.
    await write(direct, 'X')
    await write(restored, 'X')
    expect([restored.buffer.active.cursorX, restored.buffer.active.cursorY]).toEqual([
      direct.buffer.active.cursorX,
      direct.buffer.active.cursorY,
    ])
  })
})
