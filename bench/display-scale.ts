/**
 * The display pipeline at scale (issues 18 and 27), each row side by side with its baseline in one run:
 *
 * 1. Soak (display-memory.ts): 30 terminals with moderate coloured output (bursts of log lines,
 *    ~0.35 MB/s in all) and two watchers each for SOAK_SECONDS, while tmux runs the same program in
 *    30 panes: display bytes written per output byte (≤ 1.5×), database growth against journal
 *    growth (≤ 1×), the sidecar's RSS against tmux's (≤ 2×) and its growth after the first minute.
 * 2. Quiet terminals (display-memory.ts): 20 terminals that each printed 15,000 coloured lines (a
 *    full 10,000-row history) in a fresh sidecar: RSS per terminal with the emulators live and after
 *    they were released, against a tmux 3 pane with the same output and history (≤ 1× each); then
 *    the time to rebuild one (a screen read of a released terminal, median; ≤ 300 ms).
 * 3. Flood: 3 terminals `cat` a FLOOD_MIB file each at once, plain and SGR-coloured; every 100 ms
 *    the newest revision's sequence is compared with the journal's: how long ago the first record
 *    it does not cover arrived (p100 over the flood; ≤ 5 s).
 * 4. Crash (display-crash.ts): the newest persisted revision's lag when the sidecar is killed
 *    during an SGR-coloured flood on three terminals (≤ 5 s, at the moment of the crash).
 * 5. Fan-out: WATCHERS watchOutput streams of one terminal printing a WATCH_MIB file, all checked
 *    byte-exact, aggregate delivered bytes/s against one watcher of the same (≥ 0.5×).
 * 6. Settle (display-durability.ts): 30 quiet terminals typed into at once: each echo → its
 *    revision committed (p100 ≤ the settle time + 250 ms), and a SIGKILL at that bound keeps every
 *    echo.
 */
import { execFileSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { DisplayStats } from '../sidecar/display/service.ts'
import { startSidecar, type RunningSidecar } from '../test/support/sidecar.ts'
import { insertSession, shellsFixture, SidecarHttp } from '../test/support/terminals.ts'
import { drain } from './journal.ts'
import { crashLag } from './display-crash.ts'
import { quietDurability } from './display-durability.ts'
import { type MemoryHarness, QUIET_LINES, quietMemory, soakMemory } from './display-memory.ts'
import type { BenchRow, BenchScenario } from './table.ts'
import { now, sleep } from './clock.ts'

const FLOOD_TERMINALS = 3
const FLOOD_MIB = 100
const WATCHERS = 100
const WATCH_MIB = 8
const MiB = 1024 * 1024

async function stats(http: SidecarHttp): Promise<DisplayStats> {
  return (await http.json<DisplayStats>('GET', '/v1/display/stats')).body
}

/** Sessions s0…s3 (a session holds at most 16 terminals). */
const SESSIONS = 4
const sessionOf = (i: number) => `s${i % SESSIONS}`

async function withSidecar<T>(
  dir: string,
  scripts: Record<string, string>,
  env: Record<string, string>,
  run: (sidecar: RunningSidecar, http: SidecarHttp, path: (name: string) => string) => Promise<T>,
): Promise<T> {
  const fixture = shellsFixture(scripts)
  const sidecar = await startSidecar({
    dataDir: mkdtempSync(join(dir, 'sidecar-')),
    env: { TERMKEEP_SHELLS_FILE: fixture.shellsFile, ...env },
  })
  try {
    for (let i = 0; i < SESSIONS; i++) await insertSession(sidecar.databaseUrl, sessionOf(i), dir)
    return await run(sidecar, new SidecarHttp(sidecar), fixture.path)
  } finally {
    await sidecar.stop()
    rmSync(fixture.dir, { recursive: true, force: true })
  }
}

async function create(http: SidecarHttp, id: string, shell: string, cols = 80, rows = 24, session = 's0'): Promise<void> {
  const created = await http.json('PUT', `/v1/sessions/${session}/terminals/${id}`, { json: { cols, rows, shell } })
  if (created.status !== 201) throw new Error(`create ${id}: ${JSON.stringify(created.body)}`)
}

/** Bursts of coloured log lines (~100 bytes each) with pauses: ~18 KB/s per terminal. */
const SOAK_PROGRAM = String.raw`i=0
while :; do
  n=$((RANDOM % 120 + 20)); j=0
  while [ $j -lt $n ]; do
    printf '\033[90m08:%02d:%02d\033[0m \033[3%dmINFO\033[0m \033[36m[worker-%d]\033[0m request \033[1m#%d\033[0m served in %dms %s\r\n' $((i / 60 % 60)) $((i % 60)) $((i % 7 + 1)) $((i % 9)) $i $((i * 7 % 900)) "path=/api/v1/items/$((i * 13 % 1000))"
    j=$((j+1)); i=$((i+1))
  done
  sleep 0.$((RANDOM % 5 + 2))
done`

async function soak(dir: string): Promise<BenchRow[]> {
  return soakMemory(dir, SOAK_PROGRAM, harness(dir))
}

function colouredFile(path: string, lines: number): void {
  let out = ''
  for (let i = 0; i < lines; i++)
    out += `\x1b[90m08:${String(((i / 60) % 60) | 0).padStart(2, '0')}:${String(i % 60).padStart(2, '0')}\x1b[0m \x1b[3${(i % 7) + 1}mINFO\x1b[0m \x1b[36m[w-${i % 9}]\x1b[0m request \x1b[1m#${i}\x1b[0m served in ${(i * 7) % 900}ms\n`
  writeFileSync(path, out)
}

async function quiet(dir: string): Promise<BenchRow[]> {
  const file = join(dir, 'quiet.txt')
  colouredFile(file, QUIET_LINES)
  return quietMemory(dir, file, harness(dir))
}

function harness(dir: string): MemoryHarness {
  return {
    withSidecar: (scripts, env, run) => withSidecar(dir, scripts, env, run),
    create: (http, id, shell, session) => create(http, id, shell, 80, 24, session),
    sessionOf,
  }
}

function plainFile(path: string, mib: number): void {
  const lines: string[] = []
  for (let size = 0, i = 0; size < MiB; i++) {
    const line = `${String(i).padStart(7, '0')} the quick brown fox jumps over the lazy dog ${'.'.repeat(i % 40)}\n`
    lines.push(line)
    size += line.length
  }
  const chunk = lines.join('')
  writeFileSync(path, chunk.repeat(mib))
}

/** A counter flood where every line carries colours (what a coloured log or test runner prints). */
function sgrFile(path: string, mib: number): void {
  const lines: string[] = []
  for (let size = 0, i = 0; size < MiB; i++) {
    const line = `\x1b[90m${String(i).padStart(7, '0')}\x1b[0m \x1b[3${(i % 7) + 1}m${i % 3 === 0 ? 'PASS' : 'INFO'}\x1b[0m \x1b[1;36mcase-${i % 97}\x1b[0m ${'.'.repeat(i % 30)} \x1b[2m${(i * 7) % 1000} ms\x1b[0m\n`
    lines.push(line)
    size += line.length
  }
  writeFileSync(path, lines.join('').repeat(mib))
}

async function flood(dir: string, kind: 'plain' | 'sgr'): Promise<BenchRow[]> {
  const file = join(dir, `flood-${kind}.txt`)
  if (kind === 'plain') plainFile(file, FLOOD_MIB)
  else sgrFile(file, FLOOD_MIB)
  return withSidecar(dir, { flood: `cat ${file}\nexec sleep 600` }, {}, async (_sidecar, http, path) => {
    // When each journal sequence was first seen (arrival, to within one poll).
    const seen = new Map<string, Array<[number, number]>>()
    const lagOf = (key: string, covered: number, at: number): number => {
      const arrivals = seen.get(key) ?? []
      const first = arrivals.find(([, sequence]) => sequence > covered)
      return first ? at - first[0] : 0
    }
    const keys = Array.from({ length: FLOOD_TERMINALS }, (_, i) => `s0/f${i}`)
    for (let i = 0; i < FLOOD_TERMINALS; i++) await create(http, `f${i}`, path('flood'), 120, 40)
    const lags: number[] = []
    const emulatorLags: number[] = []
    const started = now()
    let previous = started
    for (;;) {
      const s = await stats(http)
      const at = now()
      let busy = false
      for (const key of keys) {
        const t = s.terminals.find((x) => x.key === key)
        if (!t) continue
        const list = seen.get(key) ?? []
        // Arrival is taken at the previous poll: the lag is overestimated by at most one poll.
        if (list.length === 0 || list[list.length - 1][1] < t.journalSequence) list.push([previous, t.journalSequence])
        seen.set(key, list)
        lags.push(lagOf(key, t.writtenSequence, at))
        emulatorLags.push(lagOf(key, t.appliedSequence, at))
        if (t.writtenSequence < t.journalSequence || list.length < 3 || at - list[list.length - 1][0] < 2000) busy = true
      }
      previous = at
      if (!busy || at - started > 180_000) break
      await sleep(100)
    }
    const worst = Math.max(...lags) / 1000
    const emulatorWorst = Math.max(...emulatorLags) / 1000
    return [
      {
        area: 'display',
        metric: `newest revision's lag behind the journal during a ${FLOOD_TERMINALS}-terminal ${kind === 'plain' ? 'plain' : 'SGR-coloured'} flood (p100)`,
        value: worst,
        unit: 's',
        target: '≤ 5 s',
        met: worst <= 5,
        note: `${FLOOD_TERMINALS} × cat ${FLOOD_MIB} MiB${kind === 'sgr' ? ' of lines with five SGR sequences each' : ''} at 120×40, sampled every 100 ms, ${((now() - started) / 1000).toFixed(0)} s; the emulator itself lagged ≤ ${emulatorWorst.toFixed(2)} s`,
      },
    ]
  })
}

async function fanOut(dir: string): Promise<BenchRow[]> {
  const file = join(dir, 'watch.txt')
  plainFile(file, WATCH_MIB)
  const expected = createHash('sha256')
    .update(Buffer.from(readFileLatin1(file).replace(/\n/g, '\r\n'), 'latin1'))
    .digest('hex')
  return withSidecar(dir, { watched: `sleep 1; cat ${file}` }, {}, async (sidecar, http, path) => {
    const run = async (id: string, watchers: number) => {
      await create(http, id, path('watched'))
      const t0 = now()
      const results = await Promise.all(
        Array.from({ length: watchers }, () => drain(sidecar, `/v1/sessions/s0/terminals/${id}/output/watch?after=0`)),
      )
      const seconds = (now() - t0 - 1000) / 1000
      const exact = results.filter((r) => r.sha256 === expected).length
      const bytes = results.reduce((n, r) => n + r.bytes, 0)
      return { rate: bytes / seconds, exact, watchers }
    }
    const one = await run('w1', 1)
    const many = await run('w100', WATCHERS)
    const ratio = many.rate / one.rate
    return [
      {
        area: 'display',
        metric: `${WATCHERS} watchOutput watchers of one busy terminal, aggregate delivered bytes/s vs one watcher`,
        value: many.rate / MiB,
        baseline: one.rate / MiB,
        unit: 'MiB/s',
        ratio,
        target: '≥ 0.5×',
        met: ratio >= 0.5 && many.exact === WATCHERS && one.exact === 1,
        note: `cat ${WATCH_MIB} MiB; byte-exact: ${many.exact}/${WATCHERS} and ${one.exact}/1`,
      },
    ]
  })
}

async function crash(dir: string): Promise<BenchRow[]> {
  const file = join(dir, 'crash-sgr.txt')
  sgrFile(file, FLOOD_MIB)
  return crashLag(file, {
    withSidecar: (scripts, run) => withSidecar(dir, scripts, {}, run),
    create: (http, id, shell) => create(http, id, shell, 120, 40),
  })
}

function readFileLatin1(path: string): string {
  return execFileSync('cat', [path], { encoding: 'latin1', maxBuffer: 64 * MiB })
}

const scenario: BenchScenario = {
  name: 'display-scale',
  async run() {
    const dir = mkdtempSync(join(tmpdir(), 'termkeep-bench-scale-'))
    try {
      const only = process.env.TERMKEEP_BENCH_SCALE?.split(',')
      const parts: Array<[string, (dir: string) => Promise<BenchRow[]>]> = [
        ['soak', soak],
        ['quiet', quiet],
        ['flood', (d) => flood(d, 'plain')],
        ['flood-sgr', (d) => flood(d, 'sgr')],
        ['crash', crash],
        ['fanout', fanOut],
        ['settle', (d) => quietDurability(d, harness(d))],
      ]
      const rows: BenchRow[] = []
      for (const [name, part] of parts) if (!only || only.includes(name)) rows.push(...(await part(dir)))
      return rows
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  },
}

export default scenario
