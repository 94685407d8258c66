/**
 * Hosts (`npm run bench -- hosts`): what several workstations behind one API cost, side by side
 * in one run.
 *
 * 1. Routing overhead, 3 hosts vs 1: the same Node API, one sqld each; the baseline reaches its
 *    one sidecar as every single-host deployment does, the fleet reaches the session's host (not
 *    its configured one) through the hosts table with a derived secret. (a) echo round trip p99
 *    (input POST → follow `output`, stty raw cat), (b) the live byte stream (watchOutput replay of
 *    STREAM_MIB through the API). Target ≤ 1.1× (echo), ≥ 0.9× (throughput). Alternating runs,
 *    each side's best.
 * 2. Database writes per minute per idle host: sqld's own counters (rows written, statements)
 *    over IDLE_WINDOW_MS while the 3-host fleet (real sidecars that never had a terminal) does
 *    nothing; measured first.
 * 3. 100 idle hosts simulated on one more sqld: 100 registrations and 100 generations claimed
 *    with the sidecar's own code (sidecar/generations/claim.ts: its heartbeat timer, its
 *    statement), without 100 sidecars, over the same window: rows written and statements per
 *    minute, and the hosts query behind `GET /v1/hosts` (uncached, p50 of QUERY_SAMPLES) with 100
 *    hosts against the same query with 3.
 */
import { availableParallelism, totalmem } from 'node:os'
import { HOSTS_CACHE_MS } from '../api/tuning.ts'
import { HOST_HEARTBEAT_MS } from '../schema/limits.ts'
import { claimGeneration, type ClaimedGeneration } from '../sidecar/generations/claim.ts'
import { openStorage } from '../storage/client.ts'
import { migrate } from '../storage/migrate.ts'
import type { Database } from '../storage/client.ts'
import { listHosts, registerHost } from '../storage/hosts.ts'
import { startSqld } from '../test/support/sqld.ts'
import { drain } from './api.ts'
import { type FleetStack, sqldCounters, startFleetStack } from './fleet-stack.ts'
import { percentile, sidecarEcho } from './journal.ts'
import type { BenchRow, BenchScenario } from './table.ts'

const STREAM_MIB = Number(process.env.TERMKEEP_BENCH_HOSTS_STREAM_MIB || 24)
const ROUNDS = 3
/** Six heartbeats of every host: the idle writes are counted over whole beats. */
const IDLE_WINDOW_MS = Number(process.env.TERMKEEP_BENCH_HOSTS_IDLE_MS || 60_000)
/** What a start writes (registration, sessions, the token) is done before idle is counted. */
const SETTLE_BEFORE_IDLE_MS = 5_000
const SIMULATED_HOSTS = 100
const QUERY_SAMPLES = 50
/** An idle host may write at most two rows per heartbeat: its beat, and one more of any kind. */
const IDLE_ROWS_PER_MINUTE = 2 * (60_000 / HOST_HEARTBEAT_MS)

const scenario: BenchScenario = {
  name: 'hosts',
  async run(): Promise<BenchRow[]> {
    const one = await startFleetStack(1)
    const three = await startFleetStack(3).catch(async (error) => {
      await one.close()
      throw error
    })
    const rows: BenchRow[] = []
    try {
      // Idle first: hosts that never had a terminal (a terminal's output leaves display revisions
      // that pruning deletes later: writes of that output, not of an idle host).
      await new Promise((r) => setTimeout(r, SETTLE_BEFORE_IDLE_MS))
      console.error(`bench: hosts: idle for ${IDLE_WINDOW_MS / 1000} s …`)
      const idle = await idleRows(three)
      rows.push(...(await routingRows(one, three)), ...idle)
    } finally {
      await one.close()
      await three.close()
    }
    return rows
  },
}

const terminalPath = (stack: FleetStack, tid: string) => `/v1/sessions/${stack.session}/terminals/${tid}`

async function put(stack: FleetStack, tid: string, command: string): Promise<void> {
  const response = await fetch(`${stack.api.url}${terminalPath(stack, tid)}`, {
    method: 'PUT',
    headers: { ...stack.auth, 'content-type': 'application/json' },
    body: JSON.stringify({ cols: 200, rows: 50, command }),
  })
  if (response.status !== 201) throw new Error(`create ${tid} answered ${response.status}: ${await response.text()}`)
}

async function routingRows(one: FleetStack, three: FleetStack): Promise<BenchRow[]> {
  const stacks = [one, three]
  for (const stack of stacks) {
    await put(stack, 'echo', 'stty raw -echo; exec cat')
    await put(stack, 'flood', `head -c ${(STREAM_MIB * 1024 * 1024 * 3) / 4} /dev/urandom | base64 -w 199`)
  }
  // The whole flood recorded (its byte source closed) before anything is timed.
  for (const stack of stacks) await drain(`${stack.api.url}${terminalPath(stack, 'flood')}/output/watch?after=0`, stack.auth)
  console.error('bench: hosts: echo and byte stream, 3 hosts vs 1 …')
  const echoP99 = [[], []] as number[][]
  const stream = [[], []] as number[][]
  for (let round = 0; round < ROUNDS; round++) {
    for (const [i, stack] of stacks.entries()) {
      const samples = await sidecarEcho(
        { url: stack.api.url, secret: stack.auth.authorization!.slice('Bearer '.length) },
        terminalPath(stack, 'echo'),
      )
      echoP99[i]!.push(percentile(samples, 99))
      const { bytes, seconds } = await drain(`${stack.api.url}${terminalPath(stack, 'flood')}/output/watch?after=0`, stack.auth)
      stream[i]!.push(bytes / seconds / 1024 / 1024)
    }
  }
  const runs = (values: number[]) => values.map((v) => v.toFixed(2)).join(', ')
  const [p1, p3] = [Math.min(...echoP99[0]!), Math.min(...echoP99[1]!)]
  const [s1, s3] = [Math.max(...stream[0]!), Math.max(...stream[1]!)]
  return [
    {
      area: 'hosts',
      metric: 'echo round trip p99 through the API, session on one of 3 hosts vs the single host',
      value: p3,
      baseline: p1,
      unit: 'ms',
      ratio: p3 / p1,
      target: '≤ 1.1×',
      met: p3 / p1 <= 1.1,
      note: `best of ${ROUNDS}; runs 3 hosts ${runs(echoP99[1]!)}, 1 host ${runs(echoP99[0]!)}`,
    },
    {
      area: 'hosts',
      metric: `live byte stream (watchOutput, ${STREAM_MIB} MiB) through the API, 3 hosts vs 1`,
      value: s3,
      baseline: s1,
      unit: 'MiB/s',
      ratio: s3 / s1,
      target: '≥ 0.9×',
      met: s3 / s1 >= 0.9,
      note: `best of ${ROUNDS}; runs 3 hosts ${runs(stream[1]!)}, 1 host ${runs(stream[0]!)}`,
    },
  ]
}

/** The real 3-host fleet idle, and 100 simulated hosts, over the same window. */
async function idleRows(three: FleetStack): Promise<BenchRow[]> {
  const sqld = await startSqld({ admin: true })
  const storage = await openStorage({ url: sqld.url })
  const claimed: ClaimedGeneration[] = []
  try {
    await migrate(storage.client)
    for (let i = 0; i < SIMULATED_HOSTS; i++) {
      const hostId = `simulated-${i}`
      claimed.push(await claimGeneration(storage.db, storage.probe, { hostId }))
      await registerHost(storage.db, {
        id: hostId,
        name: `sim${i}`,
        url: `http://127.0.0.1:${20000 + i}`,
        version: '0.1.0',
        cpus: availableParallelism(),
        memoryBytes: totalmem(),
      })
    }
    const before = await Promise.all([sqldCounters(three.sqld), sqldCounters(sqld)])
    await new Promise((r) => setTimeout(r, IDLE_WINDOW_MS))
    const after = await Promise.all([sqldCounters(three.sqld), sqldCounters(sqld)])
    const minutes = IDLE_WINDOW_MS / 60_000
    const perHostMinute = (i: number, key: 'rowsWritten' | 'queries', hosts: number) => (after[i]![key] - before[i]![key]) / minutes / hosts
    const [fewHosts, manyHosts] = [await queryTimes(three.storage.db), await queryTimes(storage.db)]
    const listed = (await (await fetch(`${three.api.url}/v1/hosts`, { headers: three.auth })).json()) as { hosts: unknown[] }
    const realWrites = perHostMinute(0, 'rowsWritten', 3)
    const simulatedWrites = perHostMinute(1, 'rowsWritten', SIMULATED_HOSTS)
    return [
      {
        area: 'hosts',
        metric: `database rows written per minute per idle host (3 real sidecars, no terminals; sqld's counters over ${IDLE_WINDOW_MS / 1000} s)`,
        value: realWrites,
        unit: 'rows/min',
        target: `≤ ${IDLE_ROWS_PER_MINUTE}`,
        met: realWrites <= IDLE_ROWS_PER_MINUTE,
        note: `${perHostMinute(0, 'queries', 3).toFixed(1)} statements/min per host, reads included; ${listed.hosts.length} hosts listed`,
      },
      {
        area: 'hosts',
        metric: `database rows written per minute, ${SIMULATED_HOSTS} simulated idle hosts (the sidecar's heartbeat code), per host`,
        value: simulatedWrites,
        unit: 'rows/min',
        target: `≤ ${IDLE_ROWS_PER_MINUTE}`,
        met: simulatedWrites <= IDLE_ROWS_PER_MINUTE,
        note: `all ${SIMULATED_HOSTS}: ${(simulatedWrites * SIMULATED_HOSTS).toFixed(0)} rows/min, ${perHostMinute(1, 'queries', 1).toFixed(0)} statements/min`,
      },
      {
        area: 'hosts',
        metric: `the hosts query behind GET /v1/hosts (uncached, p50 of ${QUERY_SAMPLES}), ${SIMULATED_HOSTS} hosts vs 3`,
        value: manyHosts.p50,
        baseline: fewHosts.p50,
        unit: 'ms',
        ratio: manyHosts.p50 / fewHosts.p50,
        target: `reported (cached ${HOSTS_CACHE_MS / 1000} s)`,
        met: true,
        note: `p99 ${manyHosts.p99.toFixed(2)} vs ${fewHosts.p99.toFixed(2)} ms; the API reads it at most once a second per instance`,
      },
    ]
  } finally {
    for (const generation of claimed) await generation.end()
    storage.close()
    await sqld.stop()
  }
}

async function queryTimes(db: Database): Promise<{ p50: number; p99: number }> {
  const times: number[] = []
  for (let i = 0; i < QUERY_SAMPLES; i++) {
    const start = performance.now()
    await listHosts(db)
    times.push(performance.now() - start)
  }
  return { p50: percentile(times, 50), p99: percentile(times, 99) }
}

export default scenario
