/**
 * Processes that outlived their terminal's keeper: a keeper killed with -9 (or a sidecar of a
 * release before the keeper, which held the PTYs itself) cannot end them. The kernel hangs up
 * their sessions, but a program that ignores SIGHUP (`nohup`, `trap '' HUP`, and the children that
 * inherit that) keeps running, owned by nobody. The next keeper kills them at its start, found by
 * what was recorded per terminal (records.ts; the sidecar's terminals table for what it asks the
 * keeper to sweep) and proven the terminal's as every kill is (identity.ts), never by a pid alone.
 */
import type { TerminalIdentity } from './identity.ts'
import { killTerminals } from './kill.ts'

/** A terminal of a dead keeper (or an earlier sidecar), as recorded. */
export type RecordedTerminal = TerminalIdentity

/** How long the sweep keeps killing what it still finds (a loop that forks between a look and its
 * kill is caught by the next look). */
const SWEEP_MS = 1_000

export interface Sweep {
  /** Pids killed, per terminal (`session/terminal`). */
  killed: Map<string, number[]>
  /** Pids still running after the last look. */
  survivors: number[]
}

/** SIGKILLs every process proven to belong to one of `terminals`, look after look until none is
 * left (or SWEEP_MS passed). They ignored the hangup already: no grace. */
export async function killLeftovers(terminals: readonly RecordedTerminal[]): Promise<Sweep> {
  const { killed, survivors } = await killTerminals(terminals, 0, SWEEP_MS)
  return { killed: new Map([...killed].map(([t, pids]) => [`${t.sessionId}/${t.id}`, pids])), survivors }
}
