/**
 * Whether the sidecar is alive, judged apart from any call's own answer: a sidecar serving
 * hundreds of streams answers a call late because the call waits there behind stream work, not
 * because it is gone. Alive means its health answered within SIDECAR_LIVENESS_TIMEOUT_MS, or it
 * answered anything within the last SIDECAR_LIVENESS_PROBE_MS (no probe needed then). One probe
 * is out at a time: every caller meanwhile shares its verdict, and a "not alive" verdict stands
 * for SIDECAR_LIVENESS_VERDICT_MS, so hundreds of waiting calls cost the sidecar one health
 * request, not hundreds queued behind the work that made them wait. Web APIs only (every runtime).
 */
import { SIDECAR_LIVENESS_PROBE_MS, SIDECAR_LIVENESS_TIMEOUT_MS, SIDECAR_LIVENESS_VERDICT_MS } from './tuning.ts'

export class SidecarLiveness {
  readonly #probe: (signal: AbortSignal) => Promise<Response>
  /** When the sidecar last answered anything (ms since the epoch). */
  #heard = 0
  /** The probe out now, shared by every caller. */
  #probing: Promise<boolean> | undefined
  /** When the last probe found the sidecar not alive (ms since the epoch; 0: it did not). */
  #dead = 0

  /** `probe` sends the sidecar's health request (with the secret) and resolves with its answer. */
  constructor(probe: (signal: AbortSignal) => Promise<Response>) {
    this.#probe = probe
  }

  /** The sidecar answered something just now. */
  heard(): void {
    this.#heard = Date.now()
  }

  alive(): Promise<boolean> {
    if (Date.now() - this.#heard < SIDECAR_LIVENESS_PROBE_MS) return Promise.resolve(true)
    if (Date.now() - this.#dead < SIDECAR_LIVENESS_VERDICT_MS) return Promise.resolve(false)
    this.#probing ??= this.#ask().finally(() => (this.#probing = undefined))
    return this.#probing
  }

  async #ask(): Promise<boolean> {
    const abort = new AbortController()
    const timer = afterDeadline(SIDECAR_LIVENESS_TIMEOUT_MS, () => abort.abort(new Error('the sidecar health did not answer')))
    try {
      const response = await this.#probe(abort.signal)
      await response.body?.cancel()
      if (response.ok) {
        this.heard()
        this.#dead = 0
        return true
      }
    } catch {
      // refused, reset or past its deadline: not alive
    } finally {
      timer.cancel()
    }
    this.#dead = Date.now()
    return false
  }
}

/**
 * Calls `expire` once `ms` have passed, but only after the I/O that arrived meanwhile was read: a
 * process that was not scheduled for a while (a loaded host) runs its due timers before it polls
 * its sockets, so a plain timer would give up on an answer already waiting there. The second,
 * zero-delay timer runs on the next turn, after that turn's poll.
 */
export function afterDeadline(ms: number, expire: () => void): { cancel(): void } {
  let timer: ReturnType<typeof setTimeout> | undefined = setTimeout(() => {
    timer = setTimeout(() => {
      timer = undefined
      expire()
    }, 0)
  }, ms)
  return {
    cancel: () => {
      clearTimeout(timer)
      timer = undefined
    },
  }
}
