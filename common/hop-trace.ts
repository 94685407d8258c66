/**
 * A bench-only trace of where a keystroke's time goes (`npm run bench -- echo`): with
 * TERMKEEP_HOP_TRACE set, each process marks named hops on the monotonic clock its host shares
 * (process.hrtime, CLOCK_MONOTONIC on Linux), so marks from the API, the sidecar, the keeper and
 * its PTY thread line up on one time axis. Unset (always, outside the bench), a mark is one
 * property read. Runtime-neutral: where there is no `process.hrtime` (Workers) nothing is marked.
 */
interface Clock {
  hrtime?: { bigint?: () => bigint }
  env?: Record<string, string | undefined>
}
const host = (globalThis as { process?: Clock }).process

/** Where the marks go (a file path, written by local/hop-trace.ts); undefined: not to a file. */
export const HOP_TRACE_TARGET = host?.hrtime?.bigint ? host.env?.TERMKEEP_HOP_TRACE || undefined : undefined

const tracing = HOP_TRACE_TARGET !== undefined
const marks: string[] = []

/** Marks `hop` now, when tracing. */
export function hopMark(hop: string): void {
  if (tracing) marks.push(`${hop} ${host!.hrtime!.bigint!()}`)
}

/** The marks made since the last call, one `hop nanoseconds` line each. */
export function takeHopMarks(): string[] {
  return marks.splice(0)
}
