import { describe, expect, it } from 'vitest'
import { bootId, type ProcessStat } from '../../local/proc.ts'
import { runProcesses } from './leftovers.ts'

const stat = (pid: number, ppid: number, startTicks: number): ProcessStat => ({
  pid,
  ppid,
  pgrp: pid,
  session: pid,
  startTicks,
  zombie: false,
})
const RUN = { runId: 'wf_abc', sessionId: 's1', startTicks: 1000, bootId: bootId() }
const MARKS = ['TERMKEEP_WORKFLOW_RUN=wf_abc', 'TERMKEEP_SESSION_ID=s1', 'TERMKEEP_TERMINAL_ID=wf_abc-2']

describe.skipIf(bootId() === undefined)('a run’s processes, by proven identity', () => {
  it('those carrying all its marks, started since the run, and their children; nothing else', () => {
    const environments: Record<number, string[]> = {
      10: MARKS, // a setsid'ed sleep of member 2
      11: [], // its child that cleared its environment
      12: [], // that child's child
      20: MARKS, // carries the marks but started before the run: not its
      21: ['TERMKEEP_WORKFLOW_RUN=wf_abc', 'TERMKEEP_SESSION_ID=s1', 'TERMKEEP_TERMINAL_ID=other-1'], // another terminal
      22: ['TERMKEEP_WORKFLOW_RUN=wf_other', 'TERMKEEP_SESSION_ID=s1', 'TERMKEEP_TERMINAL_ID=wf_other-1'], // another run
      30: [], // a stranger
    }
    const processes = [
      stat(10, 1, 1500),
      stat(11, 10, 1600),
      stat(12, 11, 1700),
      stat(20, 1, 900),
      stat(21, 1, 1500),
      stat(22, 1, 1500),
      stat(30, 1, 1500),
    ]
    expect(runProcesses(RUN, processes, (pid) => environments[pid] ?? []).sort()).toEqual([10, 11, 12])
  })

  it('nothing on another boot', () => {
    expect(runProcesses({ ...RUN, bootId: 'another-boot' }, [stat(10, 1, 1500)], () => MARKS)).toEqual([])
  })
})
