/**
 * Settling end to end with real parts: a Journal, the emulator worker pool (the display tracker
 * runs inside the worker), the DisplayService observer and a libSQL file. Bursts coalesce, an
 * unchanged screen writes nothing, a title-only change is a new revision, and disposing the
 * emulator right after EOF still settles the last bytes.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import xterm from '@xterm/headless'
import { and, eq } from 'drizzle-orm'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { decodeDisplay } from '../../common/display/decode.ts'
import { beginOf, chunksOf, latestRevision } from '../../storage/displays/revisions.ts'
import { displayRevisions } from '../../storage/tables.ts'
import type { RowsEvent } from '../../schema/wire/display.ts'
import { openStorage, type Storage } from '../../storage/client.ts'
import { migrate } from '../../storage/migrate.ts'
import { waitFor } from '../../test/support/ports.ts'
import { EmulatorPool } from '../emulator/emulator.ts'
import { Journal } from '../journal/journal.ts'
import { historyRowsFor } from './allowance.ts'
import { DisplayService } from './service.ts'
import { bufferDiff, replay } from '../../test/support/display/harness.ts'
import { useUnicode11 } from '../../common/xterm/widths.ts'

const { Terminal } = xterm
let dir: string
let storage: Storage
let service: DisplayService
let pool: EmulatorPool

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'termkeep-settle-'))
  storage = await openStorage({ url: `file:${join(dir, 'termkeep.db')}` })
  await migrate(storage.client)
  service = new DisplayService(storage.db, { settleMs: 150 })
  pool = new EmulatorPool(1, service.observer)
})
afterAll(async () => {
  await pool?.close()
  storage?.close()
  rmSync(dir, { recursive: true, force: true })
})

async function revisions(tid: string) {
  return storage.db
    .select()
    .from(displayRevisions)
    .where(and(eq(displayRevisions.sessionId, 's'), eq(displayRevisions.terminalId, tid)))
}

async function read(tid: string) {
  const header = (await latestRevision(storage.db, 's', tid))!
  const parts: RowsEvent[] = []
  for await (const body of chunksOf(storage.db, header)) parts.push(JSON.parse(body) as RowsEvent)
  return decodeDisplay(beginOf(header), parts, { revision: header.revision, truncated: header.truncated })
}

async function direct(bytes: string, cols: number, rows: number) {
  const t = new Terminal({ cols, rows, scrollback: historyRowsFor(cols), allowProposedApi: true })
  useUnicode11(t)
  await new Promise<void>((r) => t.write(bytes, r))
  return t
}

describe('settling through the emulator worker', () => {
  it('coalesces a burst, skips unchanged screens, persists title-only changes, settles the tail at EOF', async () => {
    const journal = new Journal(join(dir, 't1.spool'), { cols: 50, rows: 8 })
    const emulator = pool.open('s/t1', journal)
    let all = ''
    for (let i = 0; i < 200; i++) {
      const chunk = `\x1b[3${i % 8};4${(i + 3) % 8}m burst ${i} \x1b[0m\x1b[38;2;${i};100;200m rgb\x1b[0m\r\n`
      all += chunk
      journal.appendData(Buffer.from(chunk))
    }
    const keeper = service.keepers.get('s/t1')!
    await waitFor(async () => (await revisions('t1')).length >= 1 && keeper.encodes >= 1, 30_000, 'a settled revision')
    const afterBurst = (await revisions('t1')).length
    expect(afterBurst).toBeLessThan(20) // 200 writes, a handful of revisions at most
    const first = await read('t1')
    const copy = await replay(first)
    const expected = await direct(all, 50, 8)
    expect(bufferDiff(expected.buffer.normal, copy.terminal.buffer.normal, 50)).toEqual([])

    // Nothing changed: a settle encodes nothing new and writes nothing.
    const encodes = keeper.encodes
    await keeper.settle()
    expect(keeper.encodes).toBe(encodes + 1)
    expect((await revisions('t1')).length).toBe(afterBurst)

    // A title-only change is a change.
    journal.appendData(Buffer.from('\x1b]2;renamed\x07'))
    all += '\x1b]2;renamed\x07'
    await waitFor(async () => (await read('t1')).begin.title === 'renamed', 30_000, 'the title revision')

    // EOF then immediate dispose: the drain still settles the last bytes.
    journal.appendData(Buffer.from('\x1b[1;35mthe very last words\x1b[0m'))
    all += '\x1b[1;35mthe very last words\x1b[0m'
    journal.end()
    emulator.dispose()
    await waitFor(async () => !service.keepers.has('s/t1'), 30_000, 'the drain')
    const last = await read('t1')
    const final = await replay(last)
    const finalExpected = await direct(all, 50, 8)
    expect(bufferDiff(finalExpected.buffer.normal, final.terminal.buffer.normal, 50)).toEqual([])
    expect(last.begin.sequence).toBe(journal.lastSequence)
  })

  it('fast-forwards a flood yet settles exactly the screen a full parse gives', async () => {
    const journal = new Journal(join(dir, 't3.spool'), { cols: 80, rows: 24 })
    const emulator = pool.open('s/t3', journal)
    let all = ''
    for (let part = 0; part < 6; part++) {
      let chunk = ''
      for (let i = part * 10_000; i < (part + 1) * 10_000; i++) chunk += `\x1b[3${i % 8}m${i}\x1b[0m ${'flood '.repeat(i % 12)}\r\n`
      all += chunk
      journal.appendData(Buffer.from(chunk))
    }
    all += '\x1b]2;flooded\x07$ '
    journal.appendData(Buffer.from('\x1b]2;flooded\x07$ '))
    await waitFor(
      async () => (await revisions('t3')).some((r) => r.title === 'flooded' && r.sequence === journal.lastSequence),
      60_000,
      'the flood to settle',
    )
    expect(emulator.fastForwarded).toBeGreaterThan(1_000_000)
    const display = await read('t3')
    const copy = await replay(display)
    const expected = await direct(all, 80, 24)
    expect(bufferDiff(expected.buffer.normal, copy.terminal.buffer.normal, 80)).toEqual([])
    expect(copy.tracker.cursor()).toEqual({ ...display.begin.cursor })
  })

  it('fast-forwards a flood that arrives in small pieces (windows held over), settling the exact screen', async () => {
    const journal = new Journal(join(dir, 't4.spool'), { cols: 80, rows: 24 })
    const emulator = pool.open('s/t4', journal)
    let all = ''
    for (let part = 0; part < 300; part++) {
      let chunk = ''
      for (let i = part * 200; i < (part + 1) * 200; i++) chunk += `${i} ${'piece '.repeat(i % 9)}\r\n`
      all += chunk
      journal.appendData(Buffer.from(chunk))
      journal.flush()
      // Let the feed catch up, so it sends many small windows rather than one big one.
      if (part % 10 === 0) await new Promise((r) => setTimeout(r, 5))
    }
    all += '\x1b]2;pieces\x07$ '
    journal.appendData(Buffer.from('\x1b]2;pieces\x07$ '))
    await waitFor(
      async () => (await revisions('t4')).some((r) => r.title === 'pieces' && r.sequence === journal.lastSequence),
      60_000,
      'the flood to settle',
    )
    // No window holds the ~10,000 lines that must follow a skip point; held over, most is skipped.
    expect(emulator.fastForwarded).toBeGreaterThan(0.7 * Buffer.byteLength(all))
    const display = await read('t4')
    const copy = await replay(display)
    const expected = await direct(all, 80, 24)
    expect(bufferDiff(expected.buffer.normal, copy.terminal.buffer.normal, 80)).toEqual([])
    expect(copy.tracker.cursor()).toEqual({ ...display.begin.cursor })
  })

  it('applies the history allowance before reflow when the journal records a resize', async () => {
    const journal = new Journal(join(dir, 't2.spool'), { cols: 80, rows: 5 })
    pool.open('s/t2', journal)
    let out = ''
    for (let i = 0; i < 10_200; i++) out += `${String(i).padStart(6, '0')}${'='.repeat(74)}\r\n`
    journal.appendData(Buffer.from(out))
    journal.appendResize(40, 5)
    await waitFor(
      async () => {
        const rows = await revisions('t2')
        return rows.some((r) => r.cols === 40) ? rows : undefined
      },
      60_000,
      'the resized revision',
    )
    const display = await read('t2')
    expect(display.begin.cols).toBe(40)
    // 10,000 rows of 80 columns re-wrap into 20,000 rows of 40 within the new 20,000-row allowance.
    expect(display.history.length).toBeGreaterThanOrEqual(19_990)
  })
})
