/**
 * An error and what caused it, outermost first: drizzle wraps libSQL's error, which may wrap the
 * transport's. Bounded, so a cycle of causes ends. Web APIs only (every runtime).
 */
const MAX_CAUSE_DEPTH = 5

/** `error` and its causes that are Errors, outermost first, at most MAX_CAUSE_DEPTH. */
export function* causes(error: unknown): Generator<Error> {
  for (let e = error, depth = 0; e instanceof Error && depth < MAX_CAUSE_DEPTH; e = e.cause, depth++) yield e
}

/** The string `code` of an error in the chain (libSQL's SQLITE_*, Node's ENOSPC…), if it has one. */
export const codeOf = (e: Error): string | undefined => {
  const code = (e as { code?: unknown }).code
  return typeof code === 'string' ? code : undefined
}

/** Does an error in the chain carry a code `pattern` matches? */
export function hasCode(error: unknown, pattern: RegExp): boolean {
  for (const e of causes(error)) {
    const code = codeOf(e)
    if (code !== undefined && pattern.test(code)) return true
  }
  return false
}
