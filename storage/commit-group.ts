/**
 * Group commit (display revisions: storage/displays/writes.ts): the revisions of every terminal
 * that are ready while a commit is in flight go to the database together, in one transaction, when
 * it ends. A revision is a transaction of its own otherwise, and libSQL runs one at a time with a
 * WAL sync each: thirty terminals settled at once (a command typed into each) waited ~30 commits
 * for the last one, 0.3–1 s on this machine, where a quiet screen must be on disk within 250 ms of
 * settling.
 *
 * Each revision stays atomic: if the group's transaction fails, every revision in it is written
 * again alone, and only those that fail alone fail (a constraint race, a bug).
 */
import type { BatchItem } from 'drizzle-orm/batch'
import type { Database } from './client.ts'

interface Waiting {
  statements: BatchItem<'sqlite'>[]
  resolve: () => void
  reject: (error: unknown) => void
}

const groups = new WeakMap<Database, CommitGroup>()

export class CommitGroup {
  readonly #db: Database
  #waiting: Waiting[] = []
  #running = false

  private constructor(db: Database) {
    this.#db = db
  }

  static of(db: Database): CommitGroup {
    let group = groups.get(db)
    if (!group) groups.set(db, (group = new CommitGroup(db)))
    return group
  }

  /** Commits `statements` as one atomic unit, with whatever else is waiting then. */
  commit(statements: BatchItem<'sqlite'>[]): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      this.#waiting.push({ statements, resolve, reject })
      if (!this.#running) void this.#drain()
    })
  }

  async #drain(): Promise<void> {
    this.#running = true
    try {
      // Let the writers that settle in this turn join the first group (a timer, not setImmediate:
      // storage runs on every runtime).
      await new Promise<void>((resolve) => setTimeout(resolve, 0))
      while (this.#waiting.length > 0) {
        const group = this.#waiting
        this.#waiting = []
        await this.#commit(group)
      }
    } finally {
      this.#running = false
    }
  }

  async #commit(group: Waiting[]): Promise<void> {
    if (group.length > 1) {
      try {
        const [first, ...rest] = group.flatMap((w) => w.statements)
        await this.#db.batch([first, ...rest])
        for (const w of group) w.resolve()
        return
      } catch {
        // One of them failed: each alone, so the others land and only the failing one reports.
      }
    }
    for (const w of group) {
      try {
        const [first, ...rest] = w.statements
        await this.#db.batch([first, ...rest])
        w.resolve()
      } catch (error) {
        w.reject(error)
      }
    }
  }
}
