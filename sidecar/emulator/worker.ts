/**
 * The emulator worker: headless xterm.js screens fed from the journal, off the byte path. The main
 * thread (`emulator.ts`) sends records in sequence order; this thread parses them and reports the
 * sequence it has applied. Requests (snapshot, and kinds registered by other modules) run in order
 * with the records of their screen.
 *
 * The emulator runs at the default scheduling priority. It ran at nice 10, so that a flood's
 * parsing would yield to the PTY reader and the journal; but on a busy machine a nice-10 thread
 * gets a tenth of a normal one's share, and the screens fell behind without bound: three floods
 * with a load average of ~17 (other work on the machine) left the emulator 6.4 s (plain) and 9.0 s
 * (coloured) behind the journal at nice 10, 2.9 and 1.9 s at nice 0, and the newest revision
 * behind it by as much again. Fast-forward now keeps a flood's parsing to a few ms per MiB
 * (sidecar/display/fast-forward.ts), and the journal's throughput row measured the same within its
 * noise either way (docs/benchmarks.md).
 */
import { parentPort } from 'node:worker_threads'
import serializeModule from '@xterm/addon-serialize'
import headless from '@xterm/headless'
import { FastForward, type FeedRecord } from '../display/fast-forward.ts'
import { collectAfterWork, collectSoon } from './collect.ts'
import { cursorRestoreSuffix } from '../../common/xterm/snapshot-suffix.ts'
import { HistoryStore } from './history-store.ts'
import {
  registerRequestHandler,
  requestHandler,
  runScreenIdles,
  runScreenRestores,
  runScreenSetups,
  type EmulatorContext,
} from './handlers.ts'
import { replayRevision } from './rebuild.ts'
import { serializeScreen } from './snapshot.ts'
import { useUnicode11 } from '../../common/xterm/widths.ts'
import type { KeyModes } from '../../schema/keys.ts'
import { historyRows, type EmulatorSnapshot, type FromWorker, type RestorePayload, type ToWorker, type WireRecord } from './protocol.ts'
// Request handlers of other areas register themselves here (display issue: import its module).
import '../display/worker.ts'
import '../workflows/agent-text.ts'

// Both packages are CommonJS: named ESM imports fail under Node and tsx.
const { Terminal } = headless
const { SerializeAddon } = serializeModule

const port = parentPort
if (!port) throw new Error('emulator worker started outside a worker thread')

/** Bytes per write into xterm.js: its initial parse buffer (4,096 code units). */
const WRITE_SLICE_BYTES = 4_096

/** A screen with neither records nor requests for this long runs its idle hooks (handlers.ts). */
const SCREEN_IDLE_MS = 1_000

class Screen implements EmulatorContext {
  readonly terminal: InstanceType<typeof Terminal>
  readonly serializer: InstanceType<typeof SerializeAddon>
  /** The history beyond the rows xterm.js keeps, packed (history-store.ts). */
  readonly history: HistoryStore
  sequence = 0
  /** Everything for this screen runs on this chain, in arrival order. */
  chain: Promise<void> = Promise.resolve()
  /** Runs the idle hooks once the screen has been left alone for SCREEN_IDLE_MS. */
  idle: ReturnType<typeof setTimeout> | undefined
  /** Skips plain text that provably scrolls out of the history allowance (display issue). */
  readonly fastForward: FastForward

  constructor(
    readonly key: string,
    cols: number,
    rows: number,
  ) {
    this.terminal = new Terminal({ cols, rows, scrollback: historyRows(cols), allowProposedApi: true })
    this.history = new HistoryStore(this.terminal, historyRows(cols))
    useUnicode11(this.terminal)
    this.serializer = new SerializeAddon()
    this.terminal.loadAddon(this.serializer)
    this.fastForward = new FastForward({ cols, rows })
    runScreenSetups(this)
  }

  async apply(bytes: Uint8Array, records: WireRecord[], edge: boolean): Promise<void> {
    let written = 0
    for (const record of records) if (record.kind === 'data') written += record.end - record.start
    const feed = this.fastForward.plan(
      records.map((r) => (r.kind === 'data' ? { kind: 'data' as const, sequence: r.sequence, bytes: bytes.subarray(r.start, r.end) } : r)),
      edge,
    )
    await this.#write(feed)
    this.sequence = records.at(-1)?.sequence ?? this.sequence
    post({ type: 'applied', key: this.key, sequence: this.sequence, bytes: written, skipped: this.fastForward.skipped })
    // V8's heap alone: each window is a transferred 1 MiB buffer (external memory) that ordinary
    // collections free; counted, a flood forced a pair of full collections per worker about every
    // second (50–275 ms each on a loaded machine), time the screens' feed then lost.
    collectAfterWork({ external: false })
  }

  /**
   * A released screen comes back from its revision (rebuild.ts), then the fast-forward planner
   * and the hooks of other areas (display: the last alternate screen, the history epoch) follow.
   */
  async restore(payload: RestorePayload): Promise<void> {
    const terminal = this.terminal
    const decoded = await replayRevision(terminal, payload)
    const active = payload.state[decoded.begin.alternateScreen ? 'alternate' : 'normal']
    const full = (s: typeof active) => s.scrollTop === 0 && s.scrollBottom === terminal.rows - 1
    this.fastForward.resume({ alt: decoded.begin.alternateScreen, regionFull: full(active) && full(payload.state.normal) })
    this.sequence = payload.sequence
    runScreenRestores(this, payload, decoded)
  }

  /** Writes what fast-forward held back, so the screen reflects `sequence` exactly: before any
   * request looks at it. */
  async settle(): Promise<void> {
    await this.#write(this.fastForward.release())
  }

  async #write(feed: FeedRecord[]): Promise<void> {
    for (const record of feed) {
      if (record.kind === 'data') {
        // xterm.js decodes each write into a parse buffer that grows to the write's size (up to
        // 512 KiB) and is kept for the terminal's life: small writes keep it at its 16 KiB.
        for (let at = 0; at < record.bytes.length; at += WRITE_SLICE_BYTES) {
          this.terminal.write(record.bytes.subarray(at, at + WRITE_SLICE_BYTES))
        }
      } else {
        await this.#flush()
        // The allowance follows the width, set before the reflow so the reflow keeps it.
        this.history.resize(record.cols, record.rows, historyRows(record.cols))
      }
    }
    await this.#flush()
  }

  #flush(): Promise<void> {
    return new Promise((resolve) => this.terminal.write('', resolve))
  }
}

registerRequestHandler('snapshot', (context): EmulatorSnapshot => {
  const { terminal, serializer, sequence } = context
  return {
    sequence,
    cols: terminal.cols,
    rows: terminal.rows,
    screen: serializeScreen(serializer, terminal) + cursorRestoreSuffix(terminal),
  }
})

registerRequestHandler('input-modes', (context): KeyModes => ({ applicationCursorKeys: context.terminal.modes.applicationCursorKeysMode }))

const screens = new Map<string, Screen>()

function post(message: FromWorker): void {
  port!.postMessage(message)
}

/** Runs `step` on the screen's chain; work (not the idle hooks themselves) re-arms its idle timer. */
function enqueue(screen: Screen, step: () => Promise<void>, work = true): void {
  screen.chain = screen.chain.then(step).catch((error: unknown) => {
    console.error(`termkeep emulator ${screen.key}:`, error)
  })
  if (!work) return
  clearTimeout(screen.idle)
  screen.idle = setTimeout(() => {
    if (screens.get(screen.key) === screen) enqueue(screen, async () => runScreenIdles(screen), false)
  }, SCREEN_IDLE_MS)
  screen.idle.unref()
}

port.on('message', (message: ToWorker) => {
  if (message.type === 'open') {
    const screen = new Screen(message.key, message.cols, message.rows)
    screens.set(message.key, screen)
    const restore = message.restore
    if (restore) enqueue(screen, () => screen.restore(restore))
    return
  }
  const screen = screens.get(message.key)
  if (!screen) {
    if (message.type === 'request') {
      post({ type: 'response', key: message.key, id: message.id, ok: false, error: 'no such screen' })
    }
    return
  }
  switch (message.type) {
    case 'records':
      enqueue(screen, () => screen.apply(message.bytes, message.records, message.edge))
      return
    case 'request':
      enqueue(screen, async () => {
        const handler = requestHandler(message.kind)
        try {
          if (!handler) throw new Error(`unknown emulator request kind "${message.kind}"`)
          await screen.settle()
          const value = await handler(screen, message.payload)
          post({ type: 'response', key: screen.key, id: message.id, ok: true, value })
          collectAfterWork()
        } catch (error) {
          post({ type: 'response', key: screen.key, id: message.id, ok: false, error: String(error) })
        }
      })
      return
    case 'close':
      screens.delete(message.key)
      clearTimeout(screen.idle)
      enqueue(screen, async () => {
        screen.terminal.dispose()
        collectSoon()
      })
      return
  }
})
