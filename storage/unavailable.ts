/**
 * Which libSQL failures mean "the database cannot take this now" (unreachable, busy, read-only,
 * full, an I/O error) rather than a bug in a query: both the API and the sidecar answer those 503
 * `database/unavailable` instead of 500.
 */
import { causes, codeOf } from './causes.ts'

const UNAVAILABLE_DB_CODES =
  /^(SQLITE_BUSY|SQLITE_LOCKED|SQLITE_CANTOPEN|SQLITE_IOERR|SQLITE_READONLY|SQLITE_FULL|SERVER_ERROR|HRANA_\w+|CLIENT_CLOSED|ECONNREFUSED|ECONNRESET|ETIMEDOUT|EPIPE|UND_ERR_\w+)/

/** Pure: is this (drizzle-wrapped) error the database being unavailable? */
export function isDatabaseUnavailable(error: unknown): boolean {
  for (const e of causes(error)) {
    const code = codeOf(e)
    if (code !== undefined && UNAVAILABLE_DB_CODES.test(code)) return true
    // A remote database's transport failing.
    if (e instanceof TypeError && e.message === 'fetch failed') return true
  }
  return false
}
