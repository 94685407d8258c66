/**
 * Wires settling to every emulator: the EmulatorPool observer creates, per terminal, a
 * RevisionWriter (libSQL) and a DisplayKeeper (settle timing), and gives the pool the keeper's
 * drain so the last screen is settled and written before the emulator closes.
 *
 *   const displays = new DisplayService(storage.db)
 *   const emulators = new EmulatorPool(EMULATOR_WORKERS, displays.observer)
 */
import { beginOf, chunksOf, latestRevision } from '../../api/display/store.ts'
import { DISPLAY_DRAIN_MS, DISPLAY_KEEP_MS } from '../../schema/limits.ts'
import type { Database } from '../../storage/client.ts'
import type { EmulatorObserver } from '../emulator/emulator.ts'
import type { RestorePayload } from '../emulator/protocol.ts'
import type { EmulatorState } from '../emulator/restore.ts'
import { DisplayKeeper, type KeeperOptions } from './keeper.ts'
import { pruneDisplayRevisions, RevisionWriter } from './persist.ts'

export interface DisplayServiceOptions extends KeeperOptions {
  drainMs?: number
}

export class DisplayService {
  readonly #db: Database
  readonly #options: DisplayServiceOptions
  readonly keepers = new Map<string, DisplayKeeper>()
  readonly writers = new Map<string, RevisionWriter>()

  constructor(db: Database, options: DisplayServiceOptions = {}) {
    this.#db = db
    this.#options = options
  }

  /** Prunes old revisions now and every DISPLAY_KEEP_MS (pruneDisplayRevisions); a failure is
   * logged and tried again next time. */
  startPruning(): ReturnType<typeof setInterval> {
    const prune = () =>
      pruneDisplayRevisions(this.#db).catch((error: unknown) => console.error('termkeep sidecar: pruning old display revisions failed', error))
    void prune()
    const timer = setInterval(prune, DISPLAY_KEEP_MS)
    timer.unref()
    return timer
  }

  /** Emulator keys are `${sessionId}/${terminalId}` (ids never contain '/'). */
  readonly observer: EmulatorObserver = (emulator, journal) => {
    const slash = emulator.key.indexOf('/')
    const sessionId = emulator.key.slice(0, slash)
    const terminalId = emulator.key.slice(slash + 1)
    const writer = new RevisionWriter(this.#db, sessionId, terminalId)
    const keeper = new DisplayKeeper(emulator, journal, writer, this.#options)
    emulator.restoreFrom(() => restorePayload(this.#db, sessionId, terminalId, writer))
    this.writers.set(emulator.key, writer)
    this.keepers.set(emulator.key, keeper)
    return {
      drain: async () => {
        try {
          await keeper.drain(this.#options.drainMs ?? DISPLAY_DRAIN_MS)
        } finally {
          if (this.keepers.get(emulator.key) === keeper) this.keepers.delete(emulator.key)
        }
      },
    }
  }
}

/**
 * A released emulator's way back: the terminal's newest revision as readDisplay streams it, with
 * the state stored beside it; undefined when it has none (then the journal is replayed whole).
 * When the database's history is of the writer's current epoch, the rebuilt screen continues it.
 */
export async function restorePayload(db: Database, sessionId: string, terminalId: string, writer: RevisionWriter): Promise<RestorePayload | undefined> {
  const header = await latestRevision(db, sessionId, terminalId)
  if (!header?.restore || header.format !== 2) return undefined
  const bodies: string[] = []
  for await (const body of chunksOf(db, header)) bodies.push(body)
  const epoch = writer.epoch
  const history = epoch && epoch.epoch === header.historyEpoch ? { token: epoch.token, first: header.historyFirst! } : undefined
  return { sequence: header.sequence, begin: beginOf(header), bodies, state: header.restore as EmulatorState, history }
}
