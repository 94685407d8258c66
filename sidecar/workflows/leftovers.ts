/**
 * What a run's sub-agents leave behind: processes that left their terminal's session (`setsid
 * sleep 601 &`, a daemon), which closing the terminal does not reach (it ends the session's
 * processes: keeper/kill.ts). Every end of a run (completed, error, a limit, cancel) and a
 * sidecar that finds a run interrupted end them, by proven identity, never by a pid alone:
 *
 * - on the same boot, a process that started no earlier than the run and carries the run's marks
 *   in its environment: TERMKEEP_WORKFLOW_RUN=<run>, TERMKEEP_SESSION_ID=<session> and
 *   TERMKEEP_TERMINAL_ID=<run>-<seq> (every member's terminal has them; the run id is random,
 *   so a stranger carries them only by copying them on purpose), or
 * - a descendant of such a process (a child that cleared its environment while its parent lives).
 *
 * A process that both cleared its environment and left its parent behind carries nothing that
 * names the run, and is not found (docs/workflows.md says so).
 */
import { allProcesses, bootId, environ, type ProcessStat } from '../../local/proc.ts'
import { WORKFLOW_LEFTOVERS_WAIT_MS } from './tuning.ts'

export interface RunIdentity {
  runId: string
  sessionId: string
  /** Clock ticks since boot when the run started (identity.ts ticksSinceBoot, taken before). */
  startTicks: number
  bootId: string | undefined
}

/** Pure (but for reading environments): the pids among `processes` that are the run's, but for
 * those `spare` keeps (a live terminal's own processes, after a restart: the keeper runs them on). */
export function runProcesses(
  run: RunIdentity,
  processes: readonly ProcessStat[],
  readEnviron = environ,
  spare: (process: ProcessStat) => boolean = () => false,
): number[] {
  if (run.bootId === undefined || run.bootId !== bootId()) return []
  const marks = [`TERMKEEP_WORKFLOW_RUN=${run.runId}`, `TERMKEEP_SESSION_ID=${run.sessionId}`]
  const terminal = `TERMKEEP_TERMINAL_ID=${run.runId}-`
  const ours = new Set<number>()
  for (const p of processes) {
    if (p.pid === process.pid || p.startTicks < run.startTicks || spare(p)) continue
    const environment = readEnviron(p.pid)
    if (marks.every((mark) => environment.includes(mark)) && environment.some((entry) => entry.startsWith(terminal))) ours.add(p.pid)
  }
  for (let grew = true; grew; ) {
    grew = false
    for (const p of processes) {
      if (ours.has(p.pid) || !ours.has(p.ppid) || spare(p)) continue
      ours.add(p.pid)
      grew = true
    }
  }
  return [...ours]
}

/** SIGKILLs the run's processes, looking again until none is left (bounded); returns survivors. */
export async function endRunProcesses(
  run: RunIdentity,
  waitMs = WORKFLOW_LEFTOVERS_WAIT_MS,
  spare?: (process: ProcessStat) => boolean,
): Promise<number[]> {
  const deadline = Date.now() + waitMs
  for (;;) {
    const left = runProcesses(run, allProcesses(), environ, spare)
    for (const pid of left) {
      try {
        process.kill(pid, 'SIGKILL')
      } catch {
        // already gone
      }
    }
    if (left.length === 0 || Date.now() >= deadline) return left
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
}
