/**
 * One-time migration of legacy text-only terminal records (≤ 500 rows, ≤ 4 MiB, no styles) into
 * display revisions, run by the sidecar at start. Each record becomes one revision with its known
 * text in default styles (colours that were never stored cannot come back), written in the SAME
 * transaction as its ledger entry in `data_migrations`: after a crash every record is either
 * fully migrated (revision + ledger) or untouched, and the next start finishes the rest. A record
 * whose terminal already has display revisions is only recorded (its newer screens win).
 */
import xterm from '@xterm/headless'
import { MAX_COLS, MAX_ROWS, MIN_COLS, MIN_ROWS } from '../../schema/limits.ts'
import { hasLedgerEntry, ledgerNames, legacyRecords, recordLedgerEntry, type LegacyRecord } from '../../storage/displays/legacy.ts'
import { hasRevisions } from '../../storage/displays/writes.ts'
import type { Database } from '../../storage/client.ts'
import { useUnicode11 } from '../../common/xterm/widths.ts'
import { historyRowsFor } from './allowance.ts'
import { persistRevision } from './persist.ts'
import { encodeRevision, type EncodedRevision } from './revision.ts'
import { DisplayTracker } from './tracker.ts'

const { Terminal } = xterm

/** Ledger names: one entry per migrated record. */
export const LEGACY_LEDGER_PREFIX = 'legacy-terminal-record:'
export const ledgerName = (sessionId: string, terminalId: string) => `${LEGACY_LEDGER_PREFIX}${sessionId}/${terminalId}`

export interface LegacyMigrationResult {
  migrated: number
  superseded: number
  alreadyDone: number
}

export interface LegacyMigrationOptions {
  /** Called after each record's transaction committed (tests use it to simulate a crash). */
  afterRecord?: (record: LegacyRecord) => void | Promise<void>
}

const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, Math.trunc(n) || lo))

/** Pure-ish: renders a legacy record in a headless terminal and encodes it (default styles only). */
export async function encodeLegacyRecord(record: LegacyRecord): Promise<EncodedRevision> {
  const cols = clamp(record.cols, MIN_COLS, MAX_COLS)
  const rows = clamp(record.rows, MIN_ROWS, Math.min(MAX_ROWS, Math.floor(65_536 / cols)))
  const terminal = new Terminal({ cols, rows, scrollback: historyRowsFor(cols), allowProposedApi: true })
  useUnicode11(terminal)
  const tracker = new DisplayTracker(terminal)
  try {
    // Plain text only: drop control characters (escape sequences included) but keep tabs.
    const text = record.text.replace(/\r\n?/g, '\n').replace(/[\x00-\x08\x0b-\x1f\x7f-\x9f]/g, '')
    let ansi = text.split('\n').join('\r\n')
    if (record.cursorRow !== null && record.cursorCol !== null) {
      ansi += `\x1b[${clamp(record.cursorRow, 0, rows - 1) + 1};${clamp(record.cursorCol, 0, cols - 1) + 1}H`
    }
    if (record.title) ansi += `\x1b]2;${record.title.replace(/[\x00-\x1f\x7f-\x9f]/g, '')}\x07`
    await new Promise<void>((resolve) => terminal.write(ansi, resolve))
    return encodeRevision(tracker)
  } finally {
    tracker.dispose()
    terminal.dispose()
  }
}

export async function migrateLegacyRecords(db: Database, options: LegacyMigrationOptions = {}): Promise<LegacyMigrationResult> {
  const result: LegacyMigrationResult = { migrated: 0, superseded: 0, alreadyDone: 0 }
  const done = await ledgerNames(db, LEGACY_LEDGER_PREFIX)
  const records = await legacyRecords(db)
  for (const record of records) {
    const name = ledgerName(record.sessionId, record.terminalId)
    if (done.has(name)) {
      result.alreadyDone++
      continue
    }
    if (await hasRevisions(db, record.sessionId, record.terminalId)) {
      await recordLedgerEntry(db, name, 'superseded: the terminal already had display revisions')
      result.superseded++
    } else {
      const revision = await encodeLegacyRecord(record)
      try {
        await persistRevision(db, record.sessionId, record.terminalId, revision, {
          origin: 'migrated',
          ledger: { name, detail: `migrated ${revision.viewportRows + revision.historyRows} rows` },
        })
        result.migrated++
      } catch (error) {
        // Another starter migrated this record first (its ledger entry exists): nothing to do.
        if (!(await hasLedgerEntry(db, name))) throw error
        result.alreadyDone++
      }
    }
    await options.afterRecord?.(record)
  }
  return result
}
