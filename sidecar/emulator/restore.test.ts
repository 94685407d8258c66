/**
 * A rebuilt emulator equals the one it replaces in everything a later byte can observe. For each
 * state-heavy fixture: screen A is fed the fixture; its revision is encoded by the worker's own
 * handler, persisted, and read back as a released emulator would (restorePayload); screen B is
 * rebuilt from it with the worker's own code. Then the same continuation — bytes that probe the
 * scroll region, saved cursors, charsets, tab stops, REP, the title stack, pending wrap, modes and
 * the alternate screen — goes to both, and they must agree: every cell of both buffers, the cursor,
 * the captured state, the tracker, the follow snapshot, and the next revision's events.
 */
import serializeModule from '@xterm/addon-serialize'
import xterm, { type Terminal } from '@xterm/headless'
import { describe, expect, it } from 'vitest'
import { persistRevision, type RevisionWriter } from '../display/persist.ts'
import { restorePayload } from '../display/service.ts'
import { scratchDatabase } from '../../test/support/display/database.ts'
import { bufferDiff, referenceRevision, type ReferenceRevision } from '../../test/support/display/harness.ts'
import type { DisplayTracker } from '../display/tracker.ts'
import { DISPLAY_ENCODE, trackerOf, type DisplayEncodeResult } from '../display/worker.ts'
import { cursorRestoreSuffix } from '../../common/xterm/snapshot-suffix.ts'
import { requestHandler, runScreenRestores, runScreenSetups, type EmulatorContext } from './handlers.ts'
import { historyRows } from './protocol.ts'
import { HistoryStore, normalBuffer } from './history-store.ts'
import { replayRevision } from './rebuild.ts'
import { captureState } from './restore.ts'
import { useUnicode11 } from '../../common/xterm/widths.ts'

const { Terminal: HeadlessTerminal } = xterm
const { SerializeAddon } = serializeModule
const E = '\x1b'

const scratch = scratchDatabase('termkeep-restore-')

/** A screen as the emulator worker makes one (sidecar/emulator/worker.ts), in this thread. */
function screen(key: string, cols: number, rows: number): EmulatorContext {
  const terminal = new HeadlessTerminal({ cols, rows, scrollback: historyRows(cols), allowProposedApi: true })
  new HistoryStore(terminal, historyRows(cols))
  useUnicode11(terminal)
  const serializer = new SerializeAddon()
  terminal.loadAddon(serializer)
  const context: EmulatorContext = { terminal, serializer, sequence: 0, key }
  runScreenSetups(context)
  return context
}

const write = (t: Terminal, data: string) => new Promise<void>((resolve) => t.write(data, resolve))

function lines(n: number, width: number): string {
  let s = ''
  for (let i = 0; i < n; i++) s += `${E}[3${i % 8}m${String(i).padStart(5, '0')}${E}[0m ${'w'.repeat((i * 7) % width)}\r\n`
  return s
}

/** The captured alternate screen with its style ids resolved (each capture numbers its own). */
function resolved(tracker: DisplayTracker) {
  const captured = tracker.lastAlternate
  return captured?.rows.map((row) => row.map((v, i) => (i % 2 === 1 ? captured.styles[v as number] : v)))
}

/** Everything both screens must agree on. */
function observable(c: EmulatorContext, tracker: DisplayTracker, reference: ReferenceRevision) {
  const t = c.terminal
  return {
    cursor: [t.buffer.active.cursorX, t.buffer.active.cursorY, t.buffer.active.type],
    state: captureState(t),
    tracker: {
      cursor: tracker.cursor(),
      modes: tracker.inputModes(),
      palette: tracker.paletteState(),
      title: tracker.title,
      alternate: resolved(tracker),
    },
    snapshot: c.serializer.serialize() + cursorRestoreSuffix(t),
    chunks: reference.chunks,
  }
}

interface Fixture {
  name: string
  cols: number
  rows: number
  feed: string
  then: string
}

const PROBE = [
  `${E}8X`, // restore the saved cursor (position, attributes, charset) and print
  '\t\tT\t', // tab stops
  `${E}[3b`, // REP: the last printed character again
  `\x0eqx\x0f`, // shift out (G1) and back
  `${E}[23t`, // pop the title stack
  'ab', // after a pending wrap: where does it land?
  '\n\n\n\n\n\n\n\n\n\n', // scroll inside the region (or into history)
  `${E}M${E}M`, // reverse index at the top of the region
  'tail',
].join('')

const FIXTURES: Fixture[] = [
  {
    name: 'scroll region, origin mode, saved cursor, tabs, charsets, REP, title stack, pending wrap',
    cols: 40,
    rows: 12,
    feed: [
      lines(60, 30),
      `${E}]2;first title${E}\\${E}[22t${E}]2;second title${E}\\`,
      `${E}[3g${E}[1;5H${E}H${E}[1;17H${E}H`, // clear every tab stop, set two
      `${E}(0${E})A`, // G0 DEC line drawing, G1 UK
      `${E}[4:3m${E}[58;2;200;10;10m${E}[38;5;123m`, // current attributes: curly underline, colours
      `${E}[3;9r${E}[?6h${E}[2;4H${E}7`, // region, origin mode, save cursor inside it
      `${E}[?6l${E}[4h${E}[?1h${E}[?2004h${E}[?1002h${E}[?1006h${E}[5 q${E}[?25l`,
      `${E}[12;1H${'z'.repeat(40)}`, // the last column written: a wrap is pending
    ].join(''),
    then: PROBE,
  },
  {
    name: 'the alternate screen active, with its own region and saved cursor, over a long history',
    cols: 50,
    rows: 10,
    feed: [lines(400, 45), `${E}[5;10H${E}[?1049h${E}[H${E}[2J${E}[44m status ${E}[0m${E}[2;8r${E}[4;6H${E}7${E}[1;31mvim${E}[10;50H`].join(
      '',
    ),
    then: `${PROBE}${E}[?1049l${E}8after leaving${lines(20, 40)}`,
  },
  {
    name: 'a last alternate screen captured, palette and mouse encodings, DECSTR',
    cols: 30,
    rows: 6,
    feed: [
      lines(40, 25),
      `${E}[?1049h${E}[1;33mless page${E}[0m\r\n${E}[7m(END)${E}[0m${E}[?1049l`,
      `${E}]4;1;rgb:12/34/56${E}\\${E}]11;#102030${E}\\${E}[?1003h${E}[?1015h${E}[?1004h`,
      `${E}[!p${E}[2;20r${E}[5;3H${E}[2mdim ${E}(0lqk`,
    ].join(''),
    then: `${PROBE}${E}[?1049hnew alt${E}[?1049l`,
  },
  {
    name: 'history at the allowance with a wrapped oldest row; wide characters and combining marks at the edge',
    cols: 400,
    rows: 5,
    feed: `${Array.from({ length: 900 }, (_, i) => `${'中'.repeat(150)}${i} e\u0301 \u{1F600}${'x'.repeat(i % 90)}`).join('\r\n')}${'y'.repeat(398)}中`,
    then: `${'中文'.repeat(300)}\r\n${PROBE}`,
  },
]

describe('a rebuilt emulator', () => {
  for (const [index, f] of FIXTURES.entries()) {
    it(`equals the one it replaces: ${f.name}`, async () => {
      const key = `s/restore${index}`
      const kept = screen(key, f.cols, f.rows)
      await write(kept.terminal, f.feed)
      kept.sequence = 7
      const encode = requestHandler(DISPLAY_ENCODE)!
      const result = (await encode(kept, {})) as DisplayEncodeResult
      if (!result.changed) throw new Error('the first encode always changes')
      expect(result.revision.restore).toBeTruthy()
      const { stored } = await persistRevision(scratch.storage.db, 's', `restore${index}`, result.revision)
      const writer = { epoch: { token: stored.token, epoch: stored.epoch } } as RevisionWriter
      const payload = (await restorePayload(scratch.storage.db, 's', `restore${index}`, writer))!
      expect(payload.sequence).toBe(7)
      expect(payload.history?.token).toBe(stored.token)

      const rebuilt = screen(key, payload.begin.cols, payload.begin.rows)
      const decoded = await replayRevision(rebuilt.terminal, payload)
      rebuilt.sequence = payload.sequence
      runScreenRestores(rebuilt, payload, decoded)

      const tracker = (c: EmulatorContext) => trackerOf(c.terminal)!
      const compare = async () => {
        const a = observable(kept, tracker(kept), referenceRevision(tracker(kept)))
        const b = observable(rebuilt, tracker(rebuilt), referenceRevision(tracker(rebuilt)))
        expect(bufferDiff(normalBuffer(kept.terminal), normalBuffer(rebuilt.terminal), f.cols)).toEqual([])
        expect(bufferDiff(kept.terminal.buffer.alternate, rebuilt.terminal.buffer.alternate, f.cols)).toEqual([])
        expect(b).toEqual(a)
      }
      await compare()
      // Nothing after the revision yet: it is the screen, and no revision is written again.
      expect(((await encode(rebuilt, {})) as DisplayEncodeResult).changed).toBe(false)
      await write(kept.terminal, f.then)
      await write(rebuilt.terminal, f.then)
      // What followed the revision came as later records (an encode at the revision's own
      // sequence has nothing new: the restored screen is that revision).
      rebuilt.sequence = payload.sequence + 1
      await compare()
      // The next revision of the rebuilt screen continues the stored history (no row twice).
      const next = (await encode(rebuilt, { stored: { token: stored.token, from: stored.end } })) as DisplayEncodeResult
      if (!next.changed) throw new Error('the continuation changed the screen')
      expect(next.revision.history.token).toBe(stored.token)
      expect(next.revision.history.from).toBe(Math.max(stored.end, next.revision.history.first))
    })
  }
})
