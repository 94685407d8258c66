/**
 * Echo through the whole live path (`npm run bench -- echo`): one byte at a time into
 * `stty raw -echo; exec cat`, POSTed as input to the API and read back from the API's follow
 * stream (client → API → sidecar → keeper → PTY thread → PTY and back), against the same client's
 * POST to a bare node:http process that answers at once (the floor of any HTTP input), measured
 * alternately in the same run. Target: p99 ≤ 2.5× the floor's. The API is a process of its own
 * (`serve --api-only`), as it is deployed.
 *
 * Every process marks its hops on the host's monotonic clock (common/hop-trace.ts); the note
 * splits the median round trip and the slowest 1% by hop, so the next step is visible.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { shellsFixture } from '../test/support/terminals.ts'
import { apiProcess, startBenchStack } from './stack.ts'
import type { BenchRow, BenchScenario } from './table.ts'

/** Alternating blocks of each side; 4 × 250 = 1,000 samples each (a p99 is the 10th slowest). */
const BLOCKS = 4
const BLOCK_ROUNDS = 250
const WARMUP = 30

/** The hops in path order: each split is the time from the previous one. */
const HOPS = [
  'client: POST',
  'API: request in',
  'API: input route (auth, grants, validation done)',
  'sidecar: input route',
  'sidecar: input → keeper',
  'keeper: input → PTY thread',
  'PTY thread: write',
  'PTY thread: read',
  'keeper: output journaled → sidecar',
  'sidecar: output records from keeper',
  'sidecar: output item → follow stream',
  'API: relay chunk → client',
  'client: echo',
] as const

interface Sample {
  ms: number
  /** hrtime (ns) when the POST went out and when the echo came back. */
  start: bigint
  end: bigint
}

/**
 * The echo client, in a process of its own (a client sharing the bench's event loop would add its
 * own work to every hop): keystrokes are POSTed over
 * one kept-alive node:http connection and echoes read from a follow stream over node:http, parsed
 * as raw SSE blocks. Alternating blocks: the floor's, then the API's. Prints each sample as
 * [ms, start ns, end ns] on the host's monotonic clock.
 */
const CLIENT_SCRIPT = `
const http = require('node:http')
const { terminal, auth, bare, blocks, rounds, warmup } = JSON.parse(process.argv[1])
const agent = new http.Agent({ keepAlive: true, maxSockets: 1 })
const post = (url, body, headers = {}) => new Promise((resolve, reject) => {
  const request = http.request(url, { method: 'POST', agent, headers: { ...headers, 'content-length': String(Buffer.byteLength(body)) } }, (response) => {
    response.resume()
    response.once('end', () => resolve(response.statusCode))
  })
  request.once('error', reject)
  request.end(body)
})
;(async () => {
  let waiting
  let snapshot
  const ready = new Promise((resolve) => (snapshot = resolve))
  const follow = http.get(terminal + '/follow?attachment=bench', { headers: auth }, (response) => {
    let rest = ''
    response.setEncoding('latin1')
    response.on('data', (chunk) => {
      rest += chunk
      for (let end; (end = rest.indexOf('\\n\\n')) !== -1; rest = rest.slice(end + 2)) {
        const block = rest.slice(0, end)
        if (block.startsWith('event: snapshot\\n')) snapshot()
        if (!block.startsWith('event: output\\n')) continue
        const item = JSON.parse(block.slice(block.indexOf('\\ndata: ') + 7))
        waiting?.(Buffer.from(item.data, 'base64').toString('latin1'))
      }
    })
  })
  await ready
  await new Promise((r) => setTimeout(r, 300))
  const input = { ...auth, 'termkeep-attachment': 'bench' }
  const viaApi = async (ch) => {
    const echoed = new Promise((resolve) => (waiting = (text) => text.includes(ch) && resolve()))
    const posted = post(terminal + '/input', ch, input)
    await echoed
    return async () => { const status = await posted; if (status !== 204) throw new Error('input answered ' + status) }
  }
  const toBare = async (ch) => { const status = await post(bare, ch); if (status !== 204) throw new Error('bare server answered ' + status) }
  const timed = async (n, roundTrip, into) => {
    for (let i = 0; i < n; i++) {
      const ch = String.fromCharCode(97 + (i % 26))
      const start = process.hrtime.bigint()
      const check = await roundTrip(ch)
      const end = process.hrtime.bigint()
      into.push([Number(end - start) / 1e6, String(start), String(end)])
      await check?.()
    }
  }
  const api = []
  const floor = []
  await timed(warmup, viaApi, [])
  await timed(warmup, toBare, [])
  for (let block = 0; block < blocks; block++) {
    await timed(rounds, toBare, floor)
    await timed(rounds, viaApi, api)
  }
  follow.destroy()
  console.log(JSON.stringify({ api, floor }))
  process.exit(0)
})().catch((error) => { console.log(JSON.stringify({ error: String(error && error.message || error) })); process.exit(0) })
`

/** Runs the client; its samples, the floor's and the API's. */
function echoClient(options: Record<string, unknown>): Promise<{ api: Sample[]; floor: Sample[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', CLIENT_SCRIPT, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout!.on('data', (d: Buffer) => (out += d))
    child.once('error', reject)
    child.once('exit', () => {
      try {
        const m = JSON.parse(out) as { api: [number, string, string][]; floor: [number, string, string][]; error?: string }
        if (m.error) return reject(new Error(m.error))
        const samples = (rows: [number, string, string][]) =>
          rows.map(([ms, start, end]) => ({ ms, start: BigInt(start), end: BigInt(end) }))
        resolve({ api: samples(m.api), floor: samples(m.floor) })
      } catch {
        reject(new Error(`the echo client printed ${JSON.stringify(out.slice(0, 200))}`))
      }
    })
  })
}

/** A bare node:http process answering 204 at once; `close` stops it. */
async function bareServer(): Promise<{ url: string; close: () => void }> {
  const child = spawn(
    process.execPath,
    [
      '-e',
      "require('node:http').createServer((q, r) => q.resume().on('end', () => { r.statusCode = 204; r.end() })).listen(0, '127.0.0.1', function () { console.log(this.address().port) })",
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  )
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout!.once('data', (d: Buffer) => resolve(d.toString().trim()))
    child.once('exit', (code) => reject(new Error(`bare HTTP server exited with ${code}`)))
  })
  return { url: `http://127.0.0.1:${port}/input`, close: () => child.kill('SIGKILL') }
}

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

/** Each hop's mark inside each sample's window; the split (ms from the previous hop) per sample. */
function splits(samples: Sample[], marks: { hop: string; ns: bigint }[]): Map<Sample, number[]> {
  const sorted = [...marks].sort((a, b) => (a.ns < b.ns ? -1 : a.ns > b.ns ? 1 : 0))
  const out = new Map<Sample, number[]>()
  let from = 0
  for (const sample of samples) {
    while (from < sorted.length && sorted[from]!.ns < sample.start) from++
    const at = new Map<string, bigint>([
      ['client: POST', sample.start],
      ['client: echo', sample.end],
    ])
    for (let i = from; i < sorted.length && sorted[i]!.ns <= sample.end; i++) {
      if (!at.has(sorted[i]!.hop)) at.set(sorted[i]!.hop, sorted[i]!.ns)
    }
    if (!HOPS.every((hop) => at.has(hop))) continue
    out.set(
      sample,
      HOPS.slice(1).map((hop, i) => Number(at.get(hop)! - at.get(HOPS[i]!)!) / 1e6),
    )
  }
  return out
}

function describeSplit(rows: number[][]): string {
  const mean = (i: number) => rows.reduce((sum, row) => sum + row[i]!, 0) / rows.length
  return HOPS.slice(1)
    .map(
      (hop, i) =>
        `→ ${hop.split(':')[0]}${hop.includes('→') ? ` (${hop.split(': ')[1]})` : ` ${hop.split(': ')[1]}`} ${mean(i).toFixed(3)}`,
    )
    .join(', ')
}

async function run(): Promise<BenchRow[]> {
  const shells = shellsFixture({ echo: 'stty raw -echo; exec cat' })
  const hops = join(shells.dir, 'hops')
  const stack = await startBenchStack('echo', undefined, {
    sidecarEnv: { TERMKEEP_SHELLS_FILE: shells.shellsFile, TERMKEEP_HOP_TRACE: hops },
  })
  const { auth, dir } = stack
  // The API as deployed: a process of its own (serve --api-only), marking its hops in the same file.
  const server = await apiProcess(stack.sidecar, { TERMKEEP_HOP_TRACE: hops })
  const base = server.url
  const bare = await bareServer()
  try {
    const json = { ...auth, 'content-type': 'application/json' }
    const workspace = join(dir, 'workspaces', 'echo')
    mkdirSync(workspace, { recursive: true })
    await fetch(`${base}/v1/workspaces`, { method: 'POST', headers: json, body: JSON.stringify({ path: workspace }) })
    await fetch(`${base}/v1/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ id: 'bench', cwd: workspace }) })
    const terminal = `${base}/v1/sessions/bench/terminals/echo`
    const created = await fetch(terminal, {
      method: 'PUT',
      headers: json,
      body: JSON.stringify({ cols: 120, rows: 40, shell: shells.path('echo') }),
    })
    if (!created.ok) throw new Error(`create answered ${created.status}: ${await created.text()}`)
    const { api, floor } = await echoClient({ terminal, auth, bare: bare.url, blocks: BLOCKS, rounds: BLOCK_ROUNDS, warmup: WARMUP })
    await new Promise((r) => setTimeout(r, 600)) // the processes' last marks reach the file
    const lines = readFileSync(hops, 'utf8').split('\n')
    const marks = lines.filter(Boolean).map((line) => {
      const cut = line.lastIndexOf(' ')
      return { hop: line.slice(0, cut), ns: BigInt(line.slice(cut + 1)) }
    })
    const split = splits(api, marks)
    const p99 = percentile(
      api.map((s) => s.ms),
      99,
    )
    const floor99 = percentile(
      floor.map((s) => s.ms),
      99,
    )
    const median = percentile(
      api.map((s) => s.ms),
      50,
    )
    const near = (s: Sample) => Math.abs(s.ms - median) <= 0.1 * median
    const typical = [...split].filter(([s]) => near(s)).map(([, row]) => row)
    const slowest = [...split].filter(([s]) => s.ms >= p99).map(([, row]) => row)
    const note = [
      `p50 ${median.toFixed(2)} ms against the floor's ${percentile(
        floor.map((s) => s.ms),
        50,
      ).toFixed(2)}`,
      `split (ms from the previous hop; traced ${split.size} of ${api.length}) at p50 (${typical.length} round trips within 10% of it): ${describeSplit(typical)}`,
      `of the slowest 1% (${slowest.length}): ${describeSplit(slowest)}`,
    ].join('; ')
    return [
      {
        area: 'echo',
        metric:
          'echo round trip p99 through the API (client → API → sidecar → keeper → PTY and back), vs a bare HTTP POST to a node:http process (same client, same run)',
        value: p99,
        baseline: floor99,
        unit: 'ms',
        ratio: p99 / floor99,
        target: '≤ 2.5×',
        met: p99 <= 2.5 * floor99,
        note,
      },
    ]
  } finally {
    bare.close()
    await server.stop()
    await stack.close()
    rmSync(shells.dir, { recursive: true, force: true })
  }
}

const scenario: BenchScenario = { name: 'echo', run }
export default scenario
