/**
 * Wires settling to every emulator: the EmulatorPool observer creates, per terminal, a
 * RevisionWriter (libSQL) and a DisplayKeeper (settle timing), and gives the pool the keeper's
 * drain so the last screen is settled and written before the emulator closes.
 *
 *   const displays = new DisplayService(storage.db)
 *   const emulators = new EmulatorPool(EMULATOR_WORKERS, displays.observer)
 */
import { beginOf, latestRevision, revisionParts } from '../../storage/displays/revisions.ts'
import { DISPLAY_DRAIN_MS, DISPLAY_PRUNE_SWEEP_MS } from '../tuning.ts'
import type { Database } from '../../storage/client.ts'
import type { Emulator, EmulatorObserver, Settled } from '../emulator/emulator.ts'
import type { Journal } from '../journal/journal.ts'
import type { RestorePayload } from '../emulator/protocol.ts'
import type { EmulatorState } from '../emulator/restore.ts'
import { DisplayKeeper, type KeeperOptions } from './keeper.ts'
import { pruneDisplayRevisions } from '../../storage/displays/writes.ts'
import { RevisionWriter } from './persist.ts'

export interface DisplayServiceOptions extends KeeperOptions {
  drainMs?: number
}

/** One terminal's display pipeline, as `GET /v1/display/stats` reports it. */
export interface TerminalDisplayStats {
  key: string
  released: boolean
  releases: number
  restores: number
  appliedSequence: number
  /** The journal's last sequence (the revision lag is measured against it). */
  journalSequence: number
  revisions: number
  writtenSequence: number
  bytesWritten: number
}

export interface DisplayStats {
  terminals: TerminalDisplayStats[]
  /** The sidecar's main-thread memory (process.memoryUsage()). */
  memory: NodeJS.MemoryUsage
  /** Every writer of this sidecar, closed terminals' included. */
  revisions: number
  bytesWritten: number
}

export class DisplayService {
  readonly #db: Database
  readonly #options: DisplayServiceOptions
  readonly keepers = new Map<string, DisplayKeeper>()
  readonly #live = new Map<string, { emulator: Emulator; writer: RevisionWriter; journal: Journal }>()
  /** What the writers of closed terminals wrote. */
  #closed = { revisions: 0, bytesWritten: 0 }

  constructor(db: Database, options: DisplayServiceOptions = {}) {
    this.#db = db
    this.#options = options
  }

  /** Prunes old revisions now and every DISPLAY_PRUNE_SWEEP_MS (pruneDisplayRevisions); a failure is
   * logged and tried again next time. */
  startPruning(): ReturnType<typeof setInterval> {
    const prune = () =>
      pruneDisplayRevisions(this.#db).catch((error: unknown) =>
        console.error('termkeep sidecar: pruning old display revisions failed', error),
      )
    void prune()
    const timer = setInterval(prune, DISPLAY_PRUNE_SWEEP_MS)
    timer.unref()
    return timer
  }

  /** Emulator keys are `${sessionId}/${terminalId}` (ids never contain '/'). */
  readonly observer: EmulatorObserver = (emulator, journal) => {
    const slash = emulator.key.indexOf('/')
    const sessionId = emulator.key.slice(0, slash)
    const terminalId = emulator.key.slice(slash + 1)
    const writer = new RevisionWriter(this.#db, sessionId, terminalId)
    // Adopted after a restart: the newest revision is what the released screen shows.
    if (emulator.adopted) writer.restorable = emulator.adopted.restorable
    const keeper = new DisplayKeeper(emulator, journal, writer, { ...this.#options, encodedAt: emulator.adopted?.sequence })
    emulator.restoreFrom(() => restorePayload(this.#db, sessionId, terminalId, writer))
    this.keepers.set(emulator.key, keeper)
    this.#live.set(emulator.key, { emulator, writer, journal })
    return {
      drain: async () => {
        try {
          await keeper.drain(this.#options.drainMs ?? DISPLAY_DRAIN_MS)
        } finally {
          if (this.keepers.get(emulator.key) === keeper) this.keepers.delete(emulator.key)
          if (this.#live.get(emulator.key)?.writer === writer) {
            this.#live.delete(emulator.key)
            this.#closed.revisions += writer.landed
            this.#closed.bytesWritten += writer.bytesWritten
          }
        }
      },
    }
  }

  /** A terminal's newest revision: where its screen resumes when the terminal is adopted. */
  async settled(sessionId: string, terminalId: string): Promise<Settled | undefined> {
    const header = await latestRevision(this.#db, sessionId, terminalId)
    if (!header) return undefined
    return { sequence: header.sequence, restorable: header.format === 2 && header.restore !== null && header.restore !== undefined }
  }

  /** What the display pipeline did so far (benchmarks, operations). */
  stats(): DisplayStats {
    const terminals = [...this.#live].map(([key, { emulator, writer, journal }]) => ({
      key,
      released: emulator.released,
      releases: emulator.releases,
      restores: emulator.restores,
      appliedSequence: emulator.appliedSequence,
      journalSequence: journal.lastSequence,
      revisions: writer.written,
      writtenSequence: writer.writtenSequence,
      bytesWritten: writer.bytesWritten,
    }))
    return {
      memory: process.memoryUsage(),
      terminals,
      revisions: this.#closed.revisions + [...this.#live.values()].reduce((n, t) => n + t.writer.landed, 0),
      bytesWritten: this.#closed.bytesWritten + terminals.reduce((n, t) => n + t.bytesWritten, 0),
    }
  }
}

/**
 * A released emulator's way back: the terminal's newest revision as readDisplay streams it, with
 * the state stored beside it; undefined when it has none (then the journal is replayed whole).
 * When the database's history is of the writer's current epoch, the rebuilt screen continues it.
 */
export async function restorePayload(
  db: Database,
  sessionId: string,
  terminalId: string,
  writer: RevisionWriter,
): Promise<RestorePayload | undefined> {
  const header = await latestRevision(db, sessionId, terminalId)
  if (!header?.restore || header.format !== 2) return undefined
  const parts = await revisionParts(db, header)
  const epoch = writer.epoch
  const history = epoch && epoch.epoch === header.historyEpoch ? { token: epoch.token, first: header.historyFirst! } : undefined
  return { sequence: header.sequence, begin: beginOf(header), parts, state: header.restore as EmulatorState, history }
}
