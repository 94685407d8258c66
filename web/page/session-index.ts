/**
 * What the page knows about each session for labelling it: its record (directory, name, when it
 * started) from one listing, and its terminals (what runs in it, whether anything still does),
 * re-read while the page is visible. There is no watch stream for terminals, so they are polled;
 * the open session's view reports its own fresher list as it reads it.
 */
import type { TerminalInfo } from '../../schema/wire/terminals.ts'
import { ApiError, type TermkeepClient } from '../client/api.ts'
import type { LabelledSession } from '../client/labels.ts'

/** How often the sessions' terminals are re-read while the page is visible. */
const TERMINALS_REFRESH_MS = 10_000
/** Terminal listings in flight at once (one request per session). */
const LISTING_CONCURRENCY = 4

export class SessionIndex {
  readonly #sessions = new Map<string, LabelledSession>()
  /** A session's terminals; null when the token may not list them. */
  readonly #terminals = new Map<string, TerminalInfo[] | null>()
  readonly #listeners = new Set<() => void>()
  /** The sessions whose terminals are polled (the ones on screen). */
  #watched: string[] = []
  #key = ''
  #loadingSessions: Promise<void> | undefined
  #timer: ReturnType<typeof setTimeout> | undefined
  #stopped = false

  constructor(private readonly client: TermkeepClient) {}

  session(id: string): LabelledSession | undefined {
    return this.#sessions.get(id)
  }

  /** The session's terminals; undefined while not known, null when the token may not list them. */
  terminals(id: string): TerminalInfo[] | null | undefined {
    return this.#terminals.get(id)
  }

  /** Calls `listener` after every change of what the index knows. */
  subscribe(listener: () => void): () => void {
    this.#listeners.add(listener)
    return () => this.#listeners.delete(listener)
  }

  /** Keeps these sessions' records and terminals known (the ones on screen). */
  watch(ids: readonly string[]): void {
    this.#watched = [...ids]
    if (ids.some((id) => !this.#sessions.has(id))) void this.#loadSessions()
    if (ids.some((id) => !this.#terminals.has(id))) this.#schedule(0)
  }

  /** A fresher terminal list for one session (the open session's view read it). */
  setTerminals(id: string, terminals: TerminalInfo[]): void {
    this.#terminals.set(id, terminals)
    this.#changed()
  }

  stop(): void {
    this.#stopped = true
    clearTimeout(this.#timer)
    this.#listeners.clear()
  }

  #loadSessions(): Promise<void> {
    this.#loadingSessions ??= this.client
      .sessions()
      .then(
        (sessions) => {
          for (const session of sessions) this.#sessions.set(session.id, session)
          this.#changed()
        },
        () => {}, // labels fall back to the id; the next registry change asks again
      )
      .finally(() => (this.#loadingSessions = undefined))
    return this.#loadingSessions
  }

  #schedule(delay: number): void {
    clearTimeout(this.#timer)
    if (this.#stopped) return
    this.#timer = setTimeout(() => {
      if (document.visibilityState === 'visible' || !this.#watched.every((id) => this.#terminals.has(id))) void this.#refresh()
      else this.#schedule(TERMINALS_REFRESH_MS)
    }, delay)
  }

  async #refresh(): Promise<void> {
    const ids = [...this.#watched]
    let next = 0
    const worker = async () => {
      while (next < ids.length && !this.#stopped) {
        const id = ids[next++]
        try {
          this.#terminals.set(id, await this.client.terminals(id))
        } catch (error) {
          if (error instanceof ApiError && (error.status === 403 || error.status === 404)) this.#terminals.set(id, null)
        }
      }
    }
    await Promise.all(Array.from({ length: Math.min(LISTING_CONCURRENCY, ids.length) }, worker))
    this.#changed()
    this.#schedule(TERMINALS_REFRESH_MS)
  }

  /** Tells the listeners, when anything a label shows changed. */
  #changed(): void {
    const key = JSON.stringify([
      [...this.#sessions.values()].map((s) => [s.id, s.title, s.name, s.cwd]),
      [...this.#terminals].map(([id, list]) => [
        id,
        list?.map((t) => [t.id, t.title, t.state, t.foregroundCommand, t.closedAt, t.unreachable]),
      ]),
    ])
    if (key === this.#key) return
    this.#key = key
    for (const listener of this.#listeners) listener()
  }
}
