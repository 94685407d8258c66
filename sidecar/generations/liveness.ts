/**
 * Whether an earlier sidecar generation still runs: a second sidecar on the same database must
 * not retire (and kill the processes of) the live terminals of a first one. Pure: the judgement
 * over what the generation recorded and what this host sees.
 *
 * - Same host (hostname), same boot, same pid namespace: its pid running with its recorded start
 *   time decides, at once (a crash is seen as death immediately: a restart never waits).
 * - Same host and pid namespace, another boot: the host rebooted since; it ended.
 * - Anywhere else (another host, or a container on this kernel whose pids are not ours): its
 *   heartbeat younger than GENERATION_LEASE_MS says it runs. Clocks of the two hosts are trusted
 *   to within the lease.
 * - A clean stop, a refused start or a later sidecar's verdict recorded `endedAt`: it ended.
 *   A row written before these columns existed has no identity: it ended (as it always did).
 */
import { readlinkSync } from 'node:fs'
import { hostname } from 'node:os'
import { GENERATION_LEASE_MS } from '../tuning.ts'
import type { GenerationRecord } from '../../storage/generations.ts'
import { bootId, processStat, type ProcessStat } from '../../local/proc.ts'

export type { GenerationRecord }

/** Who runs this sidecar, as its generation row records it. */
export interface Runner {
  pid: number
  startTicks: number | null
  bootId: string | null
  hostname: string
  pidNamespace: string | null
}

/** What this host sees: who it is, the time, and the process table. */
export interface Here extends Runner {
  now: number
  stat: (pid: number) => ProcessStat | undefined
}

export type Liveness = { alive: true; how: string } | { alive: false; why: string }

export function liveness(record: GenerationRecord, here: Here): Liveness {
  if (record.endedAt !== null) return { alive: false, why: 'it ended' }
  if (record.bootId === null || record.hostname === null) return { alive: false, why: 'recorded without an identity (an older version)' }
  const sameHost = record.hostname === here.hostname && record.pidNamespace !== null && record.pidNamespace === here.pidNamespace
  if (sameHost && record.bootId === here.bootId) {
    const stat = here.stat(record.pid)
    if (stat && !stat.zombie && stat.startTicks === record.startTicks) return { alive: true, how: 'its process runs' }
    return { alive: false, why: 'its process is gone' }
  }
  if (sameHost) return { alive: false, why: 'the host rebooted since' }
  const age = record.heartbeatAt === null ? Infinity : here.now - record.heartbeatAt
  if (age < GENERATION_LEASE_MS) return { alive: true, how: `its heartbeat is ${Math.max(0, Math.round(age / 1000))} s old` }
  return { alive: false, why: 'its heartbeat stopped' }
}

/** This process, as it records itself. */
export function thisRunner(): Runner {
  let pidNamespace: string | null = null
  try {
    pidNamespace = readlinkSync('/proc/self/ns/pid')
  } catch {
    // no /proc: pids are not compared, the heartbeat decides
  }
  return {
    pid: process.pid,
    startTicks: processStat(process.pid)?.startTicks ?? null,
    bootId: bootId() ?? null,
    hostname: hostname(),
    pidNamespace,
  }
}

/** What this host sees now. */
export function here(): Here {
  return { ...thisRunner(), now: Date.now(), stat: processStat }
}
