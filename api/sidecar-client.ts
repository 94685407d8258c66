/**
 * The API's one way to reach the sidecar. Every call carries the shared secret; an unreachable
 * or silent sidecar becomes `sidecar/unavailable` quickly, and a typed error from the sidecar is
 * rebuilt as the same TermkeepError on this side of the wire.
 */
import { errorFromBody, TermkeepError } from '../schema/errors.ts'
import { SIDECAR_CONNECT_TIMEOUT_MS } from '../schema/limits.ts'

export interface SidecarClientOptions {
  url: string
  secret: string
  fetch?: typeof fetch
}

export interface SidecarHealth {
  ok: true
  generation: number
  pid: number
}

export class SidecarClient {
  readonly #url: string
  readonly #secret: string
  readonly #fetch: typeof fetch

  constructor({ url, secret, fetch: fetchImpl }: SidecarClientOptions) {
    this.#url = url.replace(/\/+$/, '')
    this.#secret = secret
    this.#fetch = fetchImpl ?? ((input, init) => fetch(input, init))
  }

  /**
   * Sends one request. The connect timeout covers only the time to response headers; a
   * streaming body afterwards is bounded by `signal` (the client's own disconnect).
   */
  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${this.#secret}`)
    const timeout = AbortSignal.timeout(SIDECAR_CONNECT_TIMEOUT_MS)
    const connect = new AbortController()
    const onTimeout = () => connect.abort(timeout.reason)
    timeout.addEventListener('abort', onTimeout)
    const signal = init.signal ? AbortSignal.any([init.signal, connect.signal]) : connect.signal
    let response: Response
    try {
      response = await this.#fetch(`${this.#url}${path}`, { ...init, headers, signal })
    } catch (cause) {
      if (init.signal?.aborted) throw cause
      throw new TermkeepError('sidecar/unavailable', 'the terminal sidecar is not reachable')
    } finally {
      timeout.removeEventListener('abort', onTimeout)
    }
    if (!response.ok) throw await this.#errorOf(response)
    return response
  }

  async json<T>(path: string, init: RequestInit = {}): Promise<T> {
    const response = await this.request(path, init)
    return (await response.json()) as T
  }

  health(): Promise<SidecarHealth> {
    return this.json<SidecarHealth>('/v1/health')
  }

  async #errorOf(response: Response): Promise<TermkeepError> {
    const body: unknown = await response.json().catch(() => undefined)
    return (
      errorFromBody(body) ??
      new TermkeepError('sidecar/unavailable', `the terminal sidecar answered ${response.status} without a typed error`)
    )
  }
}
