/**
 * The emulator worker: headless xterm.js screens fed from the journal, off the byte path. The main
 * thread (`emulator.ts`) sends records in sequence order; this thread parses them and reports the
 * sequence it has applied. Requests (snapshot, and kinds registered by other modules) run in order
 * with the records of their screen.
 */
import { readlinkSync } from 'node:fs'
import { setPriority } from 'node:os'
import { parentPort } from 'node:worker_threads'
import serializeModule from '@xterm/addon-serialize'
import headless from '@xterm/headless'
import { FastForward, type FeedRecord } from '../display/fast-forward.ts'
import { collectSoon } from './collect.ts'
import { cursorRestoreSuffix } from '../../common/xterm/snapshot-suffix.ts'
import { registerRequestHandler, requestHandler, runScreenRestores, runScreenSetups, type EmulatorContext } from './handlers.ts'
import { replayRevision } from './rebuild.ts'
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

/**
 * The emulator must never slow the byte path, but on a small machine it competes for the same
 * cores: parsing a flood (a 200 MB `cat`) took ~55% of a core on a 2-core host while the main
 * thread needed all of one, so the journal's readers got less. Lowering this thread's scheduling
 * priority (Linux: nice applies per thread, by tid) lets the PTY reader, the journal and the SSE
 * writers go first; on an idle machine the emulator still gets a whole core. Lagging during a flood
 * also makes the feed send larger windows, so fast-forward skips more. Best effort: elsewhere, or
 * if refused, the thread keeps the default priority.
 */
const EMULATOR_NICE = 10
try {
  const tid = Number(readlinkSync('/proc/thread-self').split('/').pop())
  if (Number.isInteger(tid) && tid > 0) setPriority(tid, EMULATOR_NICE)
} catch {
  // not Linux, or not permitted: default priority
}

class Screen implements EmulatorContext {
  readonly terminal: InstanceType<typeof Terminal>
  readonly serializer: InstanceType<typeof SerializeAddon>
  sequence = 0
  /** Everything for this screen runs on this chain, in arrival order. */
  chain: Promise<void> = Promise.resolve()
  /** Skips plain text that provably scrolls out of the history allowance (display issue). */
  readonly fastForward: FastForward

  constructor(
    readonly key: string,
    cols: number,
    rows: number,
  ) {
    this.terminal = new Terminal({ cols, rows, scrollback: historyRows(cols), allowProposedApi: true })
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
        if (record.bytes.length > 0) this.terminal.write(record.bytes)
      } else {
        await this.#flush()
        // The allowance follows the width, set before the reflow so the reflow keeps it.
        this.terminal.options.scrollback = historyRows(record.cols)
        this.terminal.resize(record.cols, record.rows)
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
    screen: serializer.serialize() + cursorRestoreSuffix(terminal),
  }
})

registerRequestHandler('input-modes', (context): KeyModes => ({ applicationCursorKeys: context.terminal.modes.applicationCursorKeysMode }))

const screens = new Map<string, Screen>()

function post(message: FromWorker): void {
  port!.postMessage(message)
}

function enqueue(screen: Screen, step: () => Promise<void>): void {
  screen.chain = screen.chain.then(step).catch((error: unknown) => {
    console.error(`termkeep emulator ${screen.key}:`, error)
  })
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
        } catch (error) {
          post({ type: 'response', key: screen.key, id: message.id, ok: false, error: String(error) })
        }
      })
      return
    case 'close':
      screens.delete(message.key)
      enqueue(screen, async () => {
        screen.terminal.dispose()
        collectSoon()
      })
      return
  }
})
