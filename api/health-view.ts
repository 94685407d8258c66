/**
 * What `/v1/health` says about the sidecar without ever waiting on it: a stopped (SIGSTOP) or
 * hung sidecar holds its health request open, and a health check that waits for it is no health
 * check. Each request asks the sidecar's health (one ask out at a time, shared by every request
 * meanwhile) and waits at most HEALTH_WAIT_MS for it: an answer in time is reported as it is
 * (age 0); otherwise the state last known is reported with its age and how long the ask has been
 * waiting. The ask itself goes on to its own deadline (SIDECAR_LIVENESS_TIMEOUT_MS), and its
 * outcome — an answer, or "not reachable" — becomes the state last known. Before anything is known
 * (an API's first ask) there is nothing to report instead, so that one is waited for, to its
 * deadline; the Node entry asks once at start (`prime`), so its health never waits. Web APIs only.
 */
import { HEALTH_ERROR_TEXT_CHARS } from '../storage/tuning.ts'
import { HEALTH_WAIT_MS } from './tuning.ts'
import type { HealthProblem, SidecarHealth, WorkflowsHealth } from '../schema/wire/health.ts'

/** The sidecar as health reports it. */
export interface SidecarView {
  reachable: boolean
  generation?: number
  error?: string
  /** How it runs workflow scripts, as of its last answer (once it knows). */
  workflows?: WorkflowsHealth
  /** How old this state is (ms): 0 when the sidecar answered this request. */
  ageMs: number
  /** While an ask is out unanswered past the wait: for how long (ms). */
  waitingMs?: number
  /** The sidecar's own findings, as of its last answer. */
  problems: HealthProblem[]
}

interface Known {
  at: number
  reachable: boolean
  generation?: number
  error?: string
  workflows?: WorkflowsHealth
  problems: HealthProblem[]
}

/** Pure: resolves with `promise`'s value, or `undefined` once `ms` passed first. */
export function within<T>(promise: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms)))
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

export class SidecarHealthView {
  readonly #ask: () => Promise<SidecarHealth>
  readonly #now: () => number
  #known: Known | undefined
  #asking: { since: number; outcome: Promise<Known> } | undefined

  /** `ask`: the sidecar's health request (it rejects at its own deadline). */
  constructor(ask: () => Promise<SidecarHealth>, now: () => number = Date.now) {
    this.#ask = ask
    this.#now = now
  }

  /**
   * The sidecar's state within HEALTH_WAIT_MS. `keep` is given the ask still out when the wait
   * ended, for a runtime that ends a request's work with its response (Workers' waitUntil).
   */
  async current(keep?: (pending: Promise<unknown>) => void): Promise<SidecarView> {
    const asking = (this.#asking ??= this.#start())
    const answered = this.#known ? await within(asking.outcome, HEALTH_WAIT_MS) : await asking.outcome
    if (answered) return { ...viewOf(answered), ageMs: Math.max(0, this.#now() - answered.at) }
    keep?.(asking.outcome)
    const known = this.#known!
    return { ...viewOf(known), ageMs: this.#now() - known.at, waitingMs: this.#now() - asking.since }
  }

  /** Asks now, so that a first health call finds a state known (an API's start). */
  prime(): void {
    void this.current()
  }

  #start(): { since: number; outcome: Promise<Known> } {
    const since = this.#now()
    const outcome = this.#ask().then(
      (h): Known => ({
        at: this.#now(),
        reachable: true,
        generation: h.generation,
        ...(h.workflows ? { workflows: h.workflows } : {}),
        problems: h.problems ?? [],
      }),
      (error: unknown): Known => ({
        at: this.#now(),
        reachable: false,
        error: String((error as Error)?.message ?? error).slice(0, HEALTH_ERROR_TEXT_CHARS),
        problems: [],
      }),
    )
    const asking = {
      since,
      outcome: outcome.then((known) => {
        this.#known = known
        if (this.#asking === asking) this.#asking = undefined
        return known
      }),
    }
    return asking
  }
}

function viewOf(known: Known): Omit<SidecarView, 'ageMs'> {
  return {
    reachable: known.reachable,
    ...(known.generation === undefined ? {} : { generation: known.generation }),
    ...(known.error === undefined ? {} : { error: known.error }),
    ...(known.workflows === undefined ? {} : { workflows: known.workflows }),
    problems: known.problems,
  }
}
