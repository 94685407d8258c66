/** The keeper's log lines: to its stderr, which its starter pointed at keeper.log (it has no
 * terminal). Timestamped: the log outlives many sidecars. */
export function log(line: string, error?: unknown): void {
  const detail = error === undefined ? '' : `: ${error instanceof Error ? error.message : String(error)}`
  console.error(`${new Date().toISOString()} termkeep keeper: ${line}${detail}`)
}
