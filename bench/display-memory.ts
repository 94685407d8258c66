/**
 * Memory of the display pipeline against tmux 3 keeping the same output and history, both
 * measured in this run (issue 27). Parts of the display-scale scenario:
 *
 * - quiet: QUIET terminals in a fresh sidecar, each printing QUIET_LINES coloured lines (a full
 *   10,000-row history at 80 columns), then quiet: RSS per terminal while every emulator is live
 *   (output done, revisions written), and again once every emulator was released and its worker
 *   ended; against a tmux server's RSS per pane with the same QUIET panes. Then the time to
 *   rebuild a released terminal (a screen read).
 * - soak: SOAK_TERMINALS terminals of bursty coloured logs, two watchOutput watchers each, for
 *   SOAK_SECONDS, while a tmux server runs the same program in as many panes: the display bytes
 *   written and the database's growth per output byte, the sidecar's RSS at the end against tmux's
 *   (≤ 2×), and its growth after the first minute against tmux's over the same time (flat).
 *
 * "The sidecar's RSS" counts the sidecar process and every Node process it started (none today:
 * the emulators are threads of the sidecar); the programs in the terminals are not counted, as
 * tmux's panes' programs are not.
 */
import { execFileSync } from 'node:child_process'
import { setMaxListeners } from 'node:events'
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs'
import nodeHttp from 'node:http'
import { join } from 'node:path'
import type { DisplayStats } from '../sidecar/display/service.ts'
import { historyRowsFor } from '../sidecar/display/allowance.ts'
import { keeperPaths } from '../local/keeper/paths.ts'
import { openStorage } from '../storage/client.ts'
import type { RunningSidecar } from '../test/support/sidecar.ts'
import { rssKiB, type SidecarHttp } from '../test/support/terminals.ts'
import type { BenchRow } from './table.ts'
import { now, sleep } from './clock.ts'

export const QUIET = 20
export const QUIET_LINES = 15_000
const SOAK_TERMINALS = 30
const SOAK_WATCHERS = 2
const SOAK_SECONDS = Number(process.env.TERMKEEP_BENCH_SOAK_S || 180)
const SAMPLE_MS = 5_000

export interface MemoryHarness {
  /** Runs `run` against a fresh sidecar with these shell scripts and environment. */
  withSidecar<T>(
    scripts: Record<string, string>,
    env: Record<string, string>,
    run: (sidecar: RunningSidecar, http: SidecarHttp, path: (name: string) => string) => Promise<T>,
  ): Promise<T>
  create(http: SidecarHttp, id: string, shell: string, session: string): Promise<void>
  sessionOf(i: number): string
}

async function stats(http: SidecarHttp): Promise<DisplayStats> {
  return (await http.json<DisplayStats>('GET', '/v1/display/stats')).body
}

function children(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number)
  } catch {
    return []
  }
}

/** KiB: the process and every Node process below it (emulator processes, if it ever starts any). */
export function sidecarRssKiB(pid: number): number {
  let total = rssKiB(pid)
  const queue = children(pid)
  while (queue.length > 0) {
    const child = queue.shift()!
    try {
      if (readFileSync(`/proc/${child}/comm`, 'utf8').trim() === 'node') total += rssKiB(child)
    } catch {
      continue // gone
    }
    queue.push(...children(child))
  }
  return total
}

function sizeOf(path: string): number {
  if (!existsSync(path)) return 0
  const s = statSync(path)
  if (!s.isDirectory()) return s.size
  return readdirSync(path).reduce((n, name) => n + sizeOf(join(path, name)), 0)
}

/** A tmux server on its own socket with an allowance of history at 80 columns. */
function tmuxServer(dir: string, name: string) {
  const socket = `termkeep-bench-${name}-${process.pid}`
  const conf = join(dir, `tmux-${name}.conf`)
  writeFileSync(conf, `set -g history-limit ${historyRowsFor(80)}\n`)
  const tmux = (...args: string[]) => execFileSync('tmux', ['-L', socket, '-f', conf, ...args], { encoding: 'utf8' })
  tmux('new-session', '-d', '-x', '80', '-y', '24', 'sleep 3600')
  const pid = Number(tmux('display-message', '-p', '#{pid}').trim())
  return {
    socket,
    pid,
    tmux,
    kill() {
      try {
        tmux('kill-server')
      } catch {
        // already gone
      }
    },
  }
}

/** tmux's RSS growth per pane (KiB) for `panes` panes each printing `file`. */
function tmuxPerPane(file: string, dir: string, panes: number): number {
  const server = tmuxServer(dir, 'quiet')
  try {
    const base = rssKiB(server.pid)
    for (let i = 0; i < panes; i++)
      server.tmux('new-window', '-d', `cat ${file}; tmux -L ${server.socket} wait-for -S done${i}; exec sleep 3600`)
    for (let i = 0; i < panes; i++) server.tmux('wait-for', `done${i}`)
    execFileSync('sleep', ['1'])
    return (rssKiB(server.pid) - base) / panes
  } finally {
    server.kill()
  }
}

export async function quietMemory(dir: string, file: string, h: MemoryHarness): Promise<BenchRow[]> {
  const tmuxKiB = tmuxPerPane(file, dir, QUIET)
  // Released 20 s after its output: every screen is written and still live when RSS is read first.
  return h.withSidecar(
    { quiet: `cat ${file}\nexec sleep 3600` },
    { TERMKEEP_EMULATOR_RELEASE_MS: '20000' },
    async (sidecar, http, path) => {
      await sleep(1500)
      const fresh = sidecarRssKiB(sidecar.pid)
      for (let i = 0; i < QUIET; i++) await h.create(http, `q${i}`, path('quiet'), h.sessionOf(i))
      const deadline = Date.now() + 180_000
      for (;;) {
        const s = await stats(http)
        const done =
          s.terminals.length === QUIET && s.terminals.every((t) => t.journalSequence > 0 && t.writtenSequence === t.journalSequence)
        if (done) break
        if (Date.now() > deadline) throw new Error('the quiet terminals did not settle')
        await sleep(250)
      }
      await sleep(3000) // a worker collects its garbage 1 s after its last work
      const liveStats = await stats(http)
      const early = liveStats.terminals.filter((t) => t.released).length
      const live = (sidecarRssKiB(sidecar.pid) - fresh) / QUIET
      for (;;) {
        const s = await stats(http)
        if (s.terminals.every((t) => t.released)) break
        if (Date.now() > deadline + 60_000) throw new Error('the quiet terminals were not all released')
        await sleep(250)
      }
      await sleep(8000) // collected 1 s after the last release, idle workers end 5 s after it
      const released = (sidecarRssKiB(sidecar.pid) - fresh) / QUIET
      const times: number[] = []
      for (let i = 0; i < 10; i++) {
        const t0 = now()
        const screen = await http.json('GET', `/v1/sessions/${h.sessionOf(i)}/terminals/q${i}/screen`)
        if (screen.status !== 200) throw new Error(`screen q${i}: ${screen.status}`)
        times.push(now() - t0)
      }
      times.sort((a, b) => a - b)
      const median = times[Math.floor(times.length / 2)]
      const what = `${QUIET} terminals of ${QUIET_LINES} coloured lines each (a 10,000-row history at 80 columns), started at once in a fresh sidecar; tmux 3: as many panes`
      return [
        {
          area: 'display',
          metric: 'sidecar RSS per terminal in a fresh process, emulators live (output done, revisions written), vs a tmux 3 pane',
          value: live / 1024,
          baseline: tmuxKiB / 1024,
          unit: 'MiB',
          ratio: live / tmuxKiB,
          target: '≤ 1×',
          met: live <= tmuxKiB && early === 0,
          note: `${what}${early > 0 ? `; ${early} released early, the figure is not of live emulators` : ''}`,
        },
        {
          area: 'display',
          metric: 'sidecar RSS per terminal in a fresh process after every emulator was released, vs a tmux 3 pane',
          value: released / 1024,
          baseline: tmuxKiB / 1024,
          unit: 'MiB',
          ratio: released / tmuxKiB,
          target: '≤ 1×',
          met: released <= tmuxKiB,
          note: `${what}; released, collected, idle emulator workers ended`,
        },
        {
          area: 'display',
          metric: 'rebuild of a released terminal (screen read: newest revision + journal after it)',
          value: median,
          unit: 'ms',
          target: '≤ 300 ms',
          met: median <= 300,
          note: `median of 10; all: ${times.map((t) => t.toFixed(0)).join(', ')} ms`,
        },
      ]
    },
  )
}

/** Reads a watchOutput stream until `stop`, counting bytes (what a watcher costs, not a check). */
function watch(sidecar: RunningSidecar, path: string, stop: AbortSignal): void {
  const url = new URL(sidecar.url)
  const request = nodeHttp.get(
    { host: url.hostname, port: url.port, path, headers: { authorization: `Bearer ${sidecar.secret}` }, signal: stop },
    (response) => response.resume(),
  )
  request.on('error', () => {})
}

export async function soakMemory(dir: string, program: string, h: MemoryHarness): Promise<BenchRow[]> {
  const script = join(dir, 'soak.sh')
  writeFileSync(script, `#!/bin/sh\n${program}\n`, { mode: 0o755 })
  const server = tmuxServer(dir, 'soak')
  try {
    return await h.withSidecar({ soak: program }, {}, async (sidecar, http, path) => {
      const stop = new AbortController()
      setMaxListeners(SOAK_TERMINALS * SOAK_WATCHERS + 8, stop.signal)
      try {
        const tmuxBase = rssKiB(server.pid)
        const fresh = sidecarRssKiB(sidecar.pid)
        for (let i = 0; i < SOAK_TERMINALS; i++) {
          await h.create(http, `soak${i}`, path('soak'), h.sessionOf(i))
          for (let w = 0; w < SOAK_WATCHERS; w++)
            watch(sidecar, `/v1/sessions/${h.sessionOf(i)}/terminals/soak${i}/output/watch?after=0`, stop.signal)
          server.tmux('new-window', '-d', script)
        }
        await sleep(3000) // every terminal started and settled once
        // The keeper's spool files hold the output bytes (their index files beside them do not).
        const journals = keeperPaths(sidecar.dataDir).journals
        const spools = () =>
          readdirSync(journals, { recursive: true, encoding: 'utf8' })
            .filter((name) => name.endsWith('.journal'))
            .reduce((n, name) => n + sizeOf(join(journals, name)), 0)
        const dbSize = () => ['termkeep.db', 'termkeep.db-wal'].reduce((n, f) => n + sizeOf(join(sidecar.dataDir, f)), 0)
        const start = { display: (await stats(http)).bytesWritten, journal: spools(), db: dbSize() }
        const samples: Array<{ at: number; sidecar: number; tmux: number }> = []
        const t0 = now()
        while (now() - t0 < SOAK_SECONDS * 1000) {
          await sleep(SAMPLE_MS)
          samples.push({ at: (now() - t0) / 1000, sidecar: sidecarRssKiB(sidecar.pid), tmux: rssKiB(server.pid) })
        }
        const end = { display: (await stats(http)).bytesWritten, journal: spools(), db: dbSize() }
        if (end.journal <= start.journal) throw new Error(`no output reached the journals in ${journals}`)
        const output = end.journal - start.journal
        const display = end.display - start.display
        const db = end.db - start.db
        const storage = await openStorage({ url: sidecar.databaseUrl })
        const sum = async (table: string) =>
          Number((await storage.client.execute(`SELECT coalesce(sum(length(body)), 0) AS n FROM ${table}`)).rows[0].n)
        const held = { history: await sum('display_history'), events: await sum('display_chunks') }
        storage.close()
        const mb = (n: number) => (n / 1e6).toFixed(1)
        const note = `${SOAK_TERMINALS} terminals, ${SOAK_WATCHERS} watchers each, ${SOAK_SECONDS} s soak, ${(output / SOAK_SECONDS / 1e6).toFixed(2)} MB/s of output in all`
        const where = `at the end: file ${mb(sizeOf(join(sidecar.dataDir, 'termkeep.db')))} MB + WAL ${mb(sizeOf(join(sidecar.dataDir, 'termkeep.db-wal')))} MB, holding ${mb(held.history)} MB of history rows and ${mb(held.events)} MB of viewport events`
        const last = samples.at(-1)!
        const minute = samples.find((s) => s.at >= 60) ?? samples[0]
        const peak = Math.max(...samples.map((s) => s.sidecar))
        const growth = { sidecar: last.sidecar - minute.sidecar, tmux: last.tmux - minute.tmux }
        const curve = samples
          .filter((_, i) => i % 6 === 5)
          .map((s) => `${s.at.toFixed(0)} s ${(s.sidecar / 1024).toFixed(0)}/${(s.tmux / 1024).toFixed(0)}`)
        return [
          {
            area: 'display',
            metric: 'display bytes written per output byte (moderate-output soak)',
            value: display / 1e6,
            baseline: output / 1e6,
            unit: 'MB',
            ratio: display / output,
            target: '≤ 1.5×',
            met: display / output <= 1.5,
            note,
          },
          {
            area: 'display',
            metric: 'database growth (file + WAL) vs journal growth (same soak)',
            value: db / 1e6,
            baseline: output / 1e6,
            unit: 'MB',
            ratio: db / output,
            target: '≤ 1×',
            met: db / output <= 1,
            note: `${note}; ${where}`,
          },
          {
            area: 'display',
            metric: `sidecar RSS at the end of the soak vs a tmux 3 server running the same program in ${SOAK_TERMINALS} panes at once`,
            value: last.sidecar / 1024,
            baseline: last.tmux / 1024,
            unit: 'MiB',
            ratio: last.sidecar / last.tmux,
            target: '≤ 2×',
            met: last.sidecar <= 2 * last.tmux,
            note: `${note}; sidecar ${(fresh / 1024).toFixed(0)} MiB before the terminals, peak ${(peak / 1024).toFixed(0)}; tmux server ${(tmuxBase / 1024).toFixed(1)} MiB before its panes; sidecar/tmux MiB every 30 s: ${curve.join(', ')}`,
          },
          {
            area: 'display',
            metric: 'sidecar RSS growth after the first minute of the soak vs tmux over the same time',
            value: growth.sidecar / 1024,
            baseline: growth.tmux / 1024,
            unit: 'MiB',
            ratio: growth.tmux > 0 ? growth.sidecar / growth.tmux : undefined,
            target: '≤ tmux (flat)',
            met: growth.sidecar <= Math.max(growth.tmux, 0) + 0.05 * last.sidecar,
            note: `from ${minute.at.toFixed(0)} s to ${last.at.toFixed(0)} s; both keep the same history, which fills within the first ~100 s; a growth within 5% of the sidecar's RSS counts as flat`,
          },
        ]
      } finally {
        stop.abort()
      }
    })
  } finally {
    server.kill()
  }
}
