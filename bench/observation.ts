/**
 * Terminal observation, through the whole stack (HTTP → API guard → sidecar → /proc or the file):
 *
 * - `descendants` of a 200-process tree (an interactive bash with 199 background `sleep`s),
 *   median of repeated calls, against a bare /proc walk in this process (read every
 *   /proc/<pid>/stat, collect the shell's descendants) measured in the same run. Target ≤ 50 ms.
 * - append → `follow` chunk latency: this process appends one line at a time to a file the
 *   terminal's HOME holds and times each line until its bytes arrive in a follow chunk over SSE;
 *   the baseline is a bare fs.watch reader in this process (the same inotify wake-up, then a read
 *   from its offset). p99 over all lines. Target ≤ 100 ms.
 */
import {
  appendFileSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  readSync,
  rmSync,
  watch,
  writeFileSync,
} from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createToken } from '../storage/tokens.ts'
import type { FollowChunk } from '../schema/wire/observation.ts'
import { readSse } from '../web/client/sse.ts'
import { startBenchStack, type BenchStack } from './stack.ts'
import { waitFor } from '../test/support/ports.ts'
import type { BenchRow, BenchScenario } from './table.ts'

const TREE = 200
const DESCENDANT_CALLS = 40
const APPENDS = 300
const APPEND_EVERY_MS = 10
const SID = 'bench-observe'

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]
const p99 = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.ceil(xs.length * 0.99) - 1)]
const now = () => Number(process.hrtime.bigint()) / 1e6
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** The baseline: every process's stat, then the descendants of `root` by parent links. */
function bareProcWalk(root: number): number {
  const children = new Map<number, number[]>()
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue
    let stat: string
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'latin1')
    } catch {
      continue
    }
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1])
    const list = children.get(ppid)
    if (list) list.push(Number(entry))
    else children.set(ppid, [Number(entry)])
  }
  let count = 0
  const stack = [root]
  while (stack.length > 0) {
    count++
    stack.push(...(children.get(stack.pop()!) ?? []))
  }
  return count
}

class Api {
  constructor(
    readonly stack: BenchStack,
    readonly token: string,
  ) {}
  /** As the observer, or with `auth` (the stack's all-grants token for setting up). */
  async call(
    method: string,
    path: string,
    json?: unknown,
    auth: Record<string, string> = { authorization: `Bearer ${this.token}` },
  ): Promise<any> {
    const headers: Record<string, string> = { ...auth }
    if (json !== undefined) headers['content-type'] = 'application/json'
    const response = await fetch(`${this.stack.base}${path}`, {
      method,
      headers,
      body: json === undefined ? undefined : JSON.stringify(json),
    })
    if (!response.ok) throw new Error(`${method} ${path}: ${response.status} ${await response.text()}`)
    return response.status === 204 ? undefined : response.json()
  }
}

/** A terminal with a held follow (so input can be sent), and a way to type into it. */
async function terminal(api: Api, tid: string): Promise<(text: string) => Promise<void>> {
  const base = `/v1/sessions/${SID}/terminals/${tid}`
  await api.call('PUT', base, { cols: 120, rows: 30 }, api.stack.auth)
  const follow = new AbortController()
  const held = await fetch(`${api.stack.base}${base}/follow?attachment=bench`, { headers: api.stack.auth, signal: follow.signal })
  void held.body?.pipeTo(new WritableStream()).catch(() => {})
  return async (text) => {
    const r = await fetch(`${api.stack.base}${base}/input`, {
      method: 'POST',
      headers: { ...api.stack.auth, 'termkeep-attachment': 'bench', 'content-type': 'application/octet-stream' },
      body: text,
    })
    if (r.status !== 204) throw new Error(`input ${r.status}`)
  }
}

async function descendantsRow(api: Api): Promise<BenchRow> {
  const type = await terminal(api, 'tree')
  const path = `/v1/sessions/${SID}/terminals/tree/observation/processes/descendants`
  await waitFor(
    async () => (await api.call('GET', `/v1/sessions/${SID}/terminals/tree/observation`)).foreground.executableName === 'bash',
    20_000,
    'bash',
  )
  await type(`for i in $(seq ${TREE - 1}); do sleep 900 & done\r`)
  const tree = await waitFor(
    async () => {
      const answer = await api.call('POST', path, {})
      return answer.processes.length >= TREE && answer
    },
    30_000,
    `${TREE} processes`,
  )
  const shellPid = tree.processes[0].pid
  const viaApi: number[] = []
  const bare: number[] = []
  for (let i = 0; i < DESCENDANT_CALLS; i++) {
    let start = now()
    const answer = await api.call('POST', path, {})
    viaApi.push(now() - start)
    if (answer.processes.length < TREE) throw new Error('the tree shrank')
    start = now()
    if (bareProcWalk(shellPid) < TREE) throw new Error('the bare walk missed the tree')
    bare.push(now() - start)
  }
  const value = median(viaApi)
  const baseline = median(bare)
  await type('kill $(jobs -p)\r')
  return {
    area: 'observation',
    metric: `descendants of a ${TREE}-process tree, median`,
    value,
    baseline,
    unit: 'ms',
    ratio: value / baseline,
    target: '≤ 50 ms',
    met: value <= 50,
    note: `${readdirSync('/proc').filter((e) => /^\d+$/.test(e)).length} processes on the machine; baseline: a bare /proc walk`,
  }
}

/** Appends numbered lines every APPEND_EVERY_MS; returns each line's write time. */
async function appendLines(file: string, label: string): Promise<number[]> {
  const written: number[] = []
  for (let i = 0; i < APPENDS; i++) {
    written.push(now())
    appendFileSync(file, `${JSON.stringify({ label, i, pad: 'x'.repeat(40 + (i % 50)) })}\n`)
    await sleep(APPEND_EVERY_MS)
  }
  return written
}

/** Times, per line index, when a line first arrived in `text` chunks handed to the returned function. */
function arrivals(label: string) {
  const seen: number[] = []
  let partial = ''
  return {
    seen,
    push(text: string) {
      const at = now()
      partial += text
      const lines = partial.split('\n')
      partial = lines.pop()!
      for (const line of lines) {
        const record = JSON.parse(line) as { label: string; i: number }
        if (record.label === label && seen[record.i] === undefined) seen[record.i] = at
      }
    },
  }
}

async function followRow(api: Api, home: string): Promise<BenchRow> {
  await terminal(api, 'follow')
  await waitFor(
    async () => (await api.call('GET', `/v1/sessions/${SID}/terminals/follow/observation`)).foreground.executableName === 'bash',
    20_000,
    'bash',
  )
  const file = join(home, 'journal.jsonl')
  writeFileSync(file, '')
  const { handle } = await api.call('POST', `/v1/sessions/${SID}/terminals/follow/observation/files/resolveHomeRelative`, {
    relativePath: 'journal.jsonl',
  })

  // termkeep: follow over SSE through the API.
  const got = arrivals('api')
  const stop = new AbortController()
  const response = await fetch(
    `${api.stack.base}/v1/sessions/${SID}/terminals/follow/observation/files/follow?handle=${encodeURIComponent(handle.id)}`,
    {
      headers: { authorization: `Bearer ${api.token}` },
      signal: stop.signal,
    },
  )
  const reading = (async () => {
    try {
      for await (const event of readSse(response.body!, stop.signal))
        got.push(Buffer.from((JSON.parse(event.data) as FollowChunk).bytes, 'base64').toString())
    } catch {} // the abort below ends the stream
  })()
  await sleep(200)
  const written = await appendLines(file, 'api')
  await waitFor(async () => got.seen.filter((t) => t !== undefined).length === APPENDS, 10_000, 'every line followed')
  stop.abort()
  await reading
  const viaApi = written.map((t, i) => got.seen[i] - t)

  // Baseline: a bare fs.watch reader of the same kind of file.
  const bareFile = join(home, 'bare.jsonl')
  writeFileSync(bareFile, '')
  const bare = arrivals('bare')
  const fd = openSync(bareFile, 'r')
  let offset = 0
  const watcher = watch(home, (_event, name) => {
    if (name !== 'bare.jsonl') return
    const buffer = Buffer.alloc(64 * 1024)
    for (let n; (n = readSync(fd, buffer, 0, buffer.length, offset)) > 0; offset += n) bare.push(buffer.subarray(0, n).toString())
  })
  const bareWritten = await appendLines(bareFile, 'bare')
  await waitFor(async () => bare.seen.filter((t) => t !== undefined).length === APPENDS, 10_000, 'every line read')
  watcher.close()
  closeSync(fd)
  const direct = bareWritten.map((t, i) => bare.seen[i] - t)

  const value = p99(viaApi)
  const baseline = p99(direct)
  return {
    area: 'observation',
    metric: 'append → follow chunk latency, p99',
    value,
    baseline,
    unit: 'ms',
    ratio: value / Math.max(baseline, 0.001),
    target: '≤ 100 ms',
    met: value <= 100,
    note: `${APPENDS} lines, one per ${APPEND_EVERY_MS} ms; median ${median(viaApi).toFixed(2)} ms; baseline: a bare fs.watch reader`,
  }
}

const scenario: BenchScenario = {
  name: 'observation',
  async run(): Promise<BenchRow[]> {
    // bash: the tree is made with its job control (`&`, `jobs -p`).
    // The shells' HOME beside the data directory: termkeep never serves its own state, so a HOME
    // inside it (test/support/sidecar.ts's default) has nothing an observer may read.
    const home = mkdtempSync(join(tmpdir(), 'termkeep-bench-observation-home-'))
    const stack = await startBenchStack('observation', undefined, { sidecarEnv: { SHELL: '/bin/bash', HOME: home } })
    try {
      const workspace = join(stack.dir, 'workspace')
      mkdirSync(workspace)
      await new Api(stack, '').call('POST', '/v1/sessions', { id: SID, cwd: workspace }, stack.auth)
      const { secret } = await createToken(stack.storage.db, {
        name: 'bench-observer',
        grants: ['observe:process', 'observe:files', 'observe:journal'],
        sessions: [SID],
      })
      const api = new Api(stack, secret)
      return [await descendantsRow(api), await followRow(api, home)]
    } finally {
      await stack.close()
      rmSync(home, { recursive: true, force: true })
    }
  },
}

export default scenario
