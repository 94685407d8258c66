/**
 * Legacy text-only records migrate once into display revisions with their text in default styles;
 * the ledger entry and the revision commit together, so a crash (an exception, or SIGKILL of a
 * real process) leaves each record migrated or not, and the next run finishes exactly the rest.
 */
import { fork } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { and, eq, like } from 'drizzle-orm'
import { afterAll, describe, expect, it } from 'vitest'
import { beginOf, chunksOf, latestRevision } from '../../../storage/displays/revisions.ts'
import { decodeDisplay } from '../../../common/display/decode.ts'
import { dataMigrations, displayChunks, displayHistory, displayRevisions, legacyTerminalRecords } from '../../../storage/tables.ts'
import type { RowsEvent } from '../../../schema/wire/display.ts'
import { openStorage, type Storage } from '../../../storage/client.ts'
import { migrate } from '../../../storage/migrate.ts'
import { waitFor } from '../../support/ports.ts'
import { LEGACY_LEDGER_PREFIX, ledgerName, migrateLegacyRecords } from '../../../sidecar/display/legacy.ts'
import { persistRevision } from '../../../sidecar/display/persist.ts'
import { encodeRevision } from '../../../sidecar/display/revision.ts'
import { emulator } from '../../support/display/harness.ts'

const dirs: string[] = []
const storages: Storage[] = []
afterAll(() => {
  for (const s of storages) s.close()
  for (const d of dirs) rmSync(d, { recursive: true, force: true })
})

async function database(): Promise<{ storage: Storage; url: string }> {
  const dir = mkdtempSync(join(tmpdir(), 'termkeep-legacy-'))
  dirs.push(dir)
  const url = `file:${join(dir, 'termkeep.db')}`
  const storage = await openStorage({ url })
  storages.push(storage)
  await migrate(storage.client)
  return { storage, url }
}

const LONG = Array.from({ length: 500 }, (_, i) => `legacy row ${i} ${'漢字'.repeat(i % 3)}`).join('\n')

async function seed(storage: Storage, n: number) {
  const records = Array.from({ length: n }, (_, i) => ({
    sessionId: 's',
    terminalId: `t${String(i).padStart(3, '0')}`,
    title: `old ${i}`,
    cols: 80,
    rows: 24,
    text: i === 0 ? LONG : `$ echo ${i}\n${i}\n$ `,
    cursorRow: i === 0 ? null : 2,
    cursorCol: i === 0 ? null : 2,
  }))
  for (let i = 0; i < records.length; i += 50) await storage.db.insert(legacyTerminalRecords).values(records.slice(i, i + 50))
  return records
}

async function state(storage: Storage) {
  const ledger = new Set(
    (
      await storage.db
        .select()
        .from(dataMigrations)
        .where(like(dataMigrations.name, `${LEGACY_LEDGER_PREFIX}%`))
    ).map((r) => r.name),
  )
  const revisions = await storage.db.select().from(displayRevisions)
  const chunks = await storage.db.select({ t: displayChunks.terminalId, r: displayChunks.revision }).from(displayChunks)
  const history = await storage.db.select({ t: displayHistory.terminalId, n: displayHistory.rowCount }).from(displayHistory)
  return { ledger, revisions, chunks, history }
}

/** Every record is either fully migrated (ledger + one complete revision) or untouched. */
async function expectAllOrNothing(storage: Storage, records: { sessionId: string; terminalId: string }[]) {
  const { ledger, revisions, chunks, history } = await state(storage)
  for (const r of records) {
    const mine = revisions.filter((x) => x.terminalId === r.terminalId)
    const myChunks = chunks.filter((x) => x.t === r.terminalId)
    if (ledger.has(ledgerName(r.sessionId, r.terminalId))) {
      expect(mine).toHaveLength(1)
      expect(mine[0].origin).toBe('migrated')
      expect(myChunks).toHaveLength(mine[0].headChunks!)
      const rows = history.filter((x) => x.t === r.terminalId).reduce((n, x) => n + x.n, 0)
      expect(rows).toBe(mine[0].historyRows)
    } else {
      expect(mine).toHaveLength(0)
      expect(myChunks).toHaveLength(0)
      expect(history.filter((x) => x.t === r.terminalId)).toHaveLength(0)
    }
  }
  return ledger.size
}

async function readBack(storage: Storage, terminalId: string) {
  const header = (await latestRevision(storage.db, 's', terminalId))!
  const parts: RowsEvent[] = []
  for await (const body of chunksOf(storage.db, header)) parts.push(JSON.parse(body) as RowsEvent)
  return decodeDisplay(beginOf(header), parts, { revision: header.revision, truncated: header.truncated })
}

const textOf = (row: { cells: { chars: string }[] }) => row.cells.map((c) => c.chars).join('')

describe('legacy text-record migration', () => {
  it('migrates each record once, with its text in default styles, cursor and title', async () => {
    const { storage } = await database()
    await seed(storage, 3)
    expect(await migrateLegacyRecords(storage.db)).toEqual({ migrated: 3, superseded: 0, alreadyDone: 0 })
    expect(await migrateLegacyRecords(storage.db)).toEqual({ migrated: 0, superseded: 0, alreadyDone: 3 })
    const big = await readBack(storage, 't000')
    expect(big.begin).toMatchObject({ origin: 'migrated', sequence: 0, cols: 80, rows: 24, revision: 1 })
    expect(big.styles).toEqual([{}])
    const lines = [...big.history, ...big.viewport].map(textOf)
    expect(lines.slice(0, 500)).toEqual(LONG.split('\n'))
    const small = await readBack(storage, 't001')
    expect(small.viewport.slice(0, 3).map(textOf)).toEqual(['$ echo 1', '1', '$ '])
    expect(small.begin.cursor).toMatchObject({ row: 2, col: 2 })
    expect(small.begin.title).toBe('old 1')
  })

  it('only records a terminal that already has display revisions', async () => {
    const { storage } = await database()
    await seed(storage, 2)
    const e = emulator(80, 24)
    await e.write('\x1b[31mnewer live screen\x1b[0m')
    await persistRevision(storage.db, 's', 't001', encodeRevision(e.tracker))
    expect(await migrateLegacyRecords(storage.db)).toEqual({ migrated: 1, superseded: 1, alreadyDone: 0 })
    const rows = await storage.db
      .select()
      .from(displayRevisions)
      .where(and(eq(displayRevisions.terminalId, 't001')))
    expect(rows.map((r) => r.origin)).toEqual(['live'])
  })

  it('survives an exception mid-run: each record migrated or not, the rerun finishes the rest', async () => {
    const { storage } = await database()
    const records = await seed(storage, 6)
    let seen = 0
    await expect(
      migrateLegacyRecords(storage.db, {
        afterRecord: () => {
          if (++seen === 2) throw new Error('crash')
        },
      }),
    ).rejects.toThrow('crash')
    expect(await expectAllOrNothing(storage, records)).toBe(2)
    expect(await migrateLegacyRecords(storage.db)).toEqual({ migrated: 4, superseded: 0, alreadyDone: 2 })
    expect(await expectAllOrNothing(storage, records)).toBe(6)
  })

  it('survives SIGKILL of a real migrating process', async () => {
    const { storage, url } = await database()
    const records = await seed(storage, 120)
    const child = fork(new URL('../../support/display/migrate-child.ts', import.meta.url).pathname, [url], {
      execArgv: ['--import', 'tsx'],
      stdio: 'ignore',
    })
    try {
      await waitFor(async () => (await state(storage)).ledger.size >= 5, 30_000, 'the child to migrate some records')
    } finally {
      child.kill('SIGKILL')
      await new Promise((r) => (child.exitCode !== null || child.signalCode !== null ? r(null) : child.once('exit', r)))
    }
    const before = await expectAllOrNothing(storage, records)
    expect(before).toBeGreaterThanOrEqual(5)
    expect(before).toBeLessThan(120)
    const rerun = await migrateLegacyRecords(storage.db)
    expect(rerun.migrated + rerun.alreadyDone).toBe(120)
    expect(rerun.alreadyDone).toBe(before)
    expect(await expectAllOrNothing(storage, records)).toBe(120)
  })
})
