/**
 * The revision writer's shortcuts keep what a revision write promises: revisions ready together
 * commit together (commit-group.ts), yet one that fails fails alone; pruning is skipped only while
 * nothing can be due, and what was due is pruned by the next write; a revision number the writer
 * believed to be the newest, but is not, costs a retry, never a lost revision.
 */
import { and, eq } from 'drizzle-orm'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { DISPLAY_KEEP_MS, DISPLAY_KEEP_REVISIONS } from '../../storage/tuning.ts'
import { displayChunks, displayRevisions } from '../../storage/tables.ts'
import { CommitGroup } from '../../storage/commit-group.ts'
import { HistoryPosition } from './history.ts'
import { persistRevision, RevisionWriter } from './persist.ts'
import { encodeRevision } from './revision.ts'
import { scratchDatabase } from '../../test/support/display/database.ts'
import { emulator } from '../../test/support/display/harness.ts'

const scratch = scratchDatabase('termkeep-writer-')

afterEach(() => vi.restoreAllMocks())

async function revisionsOf(terminalId: string): Promise<number[]> {
  const rows = await scratch.storage.db
    .select({ revision: displayRevisions.revision })
    .from(displayRevisions)
    .where(and(eq(displayRevisions.sessionId, 's'), eq(displayRevisions.terminalId, terminalId)))
  return rows.map((r) => r.revision).sort((a, b) => a - b)
}

describe('revision writes', () => {
  it('commit together when ready together; a failing one fails alone', async () => {
    const db = scratch.storage.db
    await db.insert(displayChunks).values({ sessionId: 's', terminalId: 'g', revision: 1, chunk: 0, body: 'taken' })
    const chunk = (revision: number, body: string) => [
      db.insert(displayChunks).values({ sessionId: 's', terminalId: 'g', revision, chunk: 0, body }),
    ]
    const group = CommitGroup.of(db)
    const results = await Promise.allSettled([
      group.commit(chunk(2, 'two')),
      group.commit(chunk(1, 'clash')),
      group.commit(chunk(3, 'three')),
    ])
    expect(results.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled'])
    const bodies = await db.select({ body: displayChunks.body }).from(displayChunks).where(eq(displayChunks.terminalId, 'g'))
    expect(bodies.map((b) => b.body).sort()).toEqual(['taken', 'three', 'two'])
  })

  it('prunes only when a revision is due, and then what is due', async () => {
    const e = emulator(40, 5)
    const position = new HistoryPosition(e.terminal)
    const writer = new RevisionWriter(scratch.storage.db, 's', 'p')
    let now = 1_000_000
    vi.spyOn(Date, 'now').mockImplementation(() => now)
    const write = async (text: string) => {
      await e.write(text)
      writer.submit(encodeRevision(e.tracker, position, { stored: writer.stored }))
      await writer.idle()
    }
    for (let i = 0; i < 8; i++) await write(`line ${i}\r\n`)
    // All young: nothing pruned.
    expect(await revisionsOf('p')).toEqual([1, 2, 3, 4, 5, 6, 7, 8])
    now += DISPLAY_KEEP_MS + 1
    await write('later\r\n')
    // The old ones beyond the newest DISPLAY_KEEP_REVISIONS + 1 went with the next write.
    expect(await revisionsOf('p')).toEqual(Array.from({ length: DISPLAY_KEEP_REVISIONS + 1 }, (_, i) => 9 - DISPLAY_KEEP_REVISIONS + i))
    expect(writer.failures).toBe(0)
  })

  it('lands every revision when another writer took the number it believed next', async () => {
    const e = emulator(40, 5)
    const position = new HistoryPosition(e.terminal)
    const writer = new RevisionWriter(scratch.storage.db, 's', 'r')
    await e.write('one\r\n')
    writer.submit(encodeRevision(e.tracker, position, { stored: writer.stored }))
    await writer.idle()
    // Someone else (a migration, an earlier sidecar) writes revision 2 behind its back.
    const other = emulator(40, 5)
    await other.write('other\r\n')
    await persistRevision(scratch.storage.db, 's', 'r', encodeRevision(other.tracker))
    await e.write('two\r\n')
    writer.submit(encodeRevision(e.tracker, position, { stored: writer.stored }))
    await writer.idle()
    expect(writer.failures).toBe(0)
    expect(writer.written).toBe(3)
    expect(await revisionsOf('r')).toEqual([1, 2, 3])
  })
})
