/** What the cheap health checks report (health.ts gathers them; write-failures.ts and storage/node/ make them). */
import type { HealthProblemCode } from '../schema/wire/health.ts'

/** A finding of one of the cheap checks (file identity, free space, failed writes); `detail` is
 * for the log only. */
export interface HealthFinding {
  code: HealthProblemCode
  message: string
  detail?: string
  /** The database's own writes fail (it is not `writable`, whatever the probe found). */
  database?: boolean
}
/** A finding of the file-identity check. */
export type FileFinding = HealthFinding & { code: 'database/file-deleted' | 'database/file-replaced' }
