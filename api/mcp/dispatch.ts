/**
 * How a tool acts: as an internal request through the same Hono app, with the caller's own
 * Authorization header. guard, validate and the route's handler run exactly as they do for an
 * HTTP client (the same token lookup, grants, session scope, schemas and sidecar client), so a
 * tool can never do what the route would refuse: there is no second authority path to keep equal.
 */
import { errorFromBody, TermkeepError } from '../../schema/errors.ts'

export type AppFetch = (request: Request) => Response | Promise<Response>

export interface RouteCall {
  /** Path template as mounted (`/v1/sessions/:sid/terminals/:tid`) and its parameters. */
  params?: Record<string, string>
  query?: Record<string, string>
  /** A JSON body (object) or raw bytes. */
  body?: unknown
  headers?: Record<string, string>
}

/** Pure: a route path with its parameters filled in (each one percent-encoded as one segment). */
export function routePath(template: string, params: Record<string, string> = {}, query: Record<string, string> = {}): string {
  const path = template.replace(/:(\w+)/g, (_, name: string) => {
    const value = params[name]
    if (value === undefined) throw new Error(`route ${template} needs :${name}`)
    return encodeURIComponent(value)
  })
  const search = new URLSearchParams(query).toString()
  return search ? `${path}?${search}` : path
}

/** The typed error a route answered with (every API error is `{error:{code,message}}`). */
async function errorOf(response: Response): Promise<TermkeepError> {
  const body: unknown = await response.json().catch(() => undefined)
  return errorFromBody(body) ?? new TermkeepError('internal/error', `the route answered ${response.status} without a typed error`)
}

export class Dispatcher {
  readonly #fetch: AppFetch
  readonly #authorization: string
  readonly signal: AbortSignal
  /** The MCP request's own origin: its routes are asked under the Host it came with, which the
   * origin guard (auth/origin.ts) let through. */
  readonly #origin: string

  constructor(fetch: AppFetch, authorization: string, signal: AbortSignal, origin = 'http://localhost') {
    this.#fetch = fetch
    this.#authorization = authorization
    this.signal = signal
    this.#origin = origin
  }

  /** Sends the request; a refusal becomes the route's own TermkeepError. `signal` (default the
   * call's) ends it, streams included. */
  async open(method: string, template: string, call: RouteCall = {}, signal = this.signal): Promise<Response> {
    const headers = new Headers(call.headers)
    headers.set('authorization', this.#authorization)
    let body: BodyInit | undefined
    if (call.body instanceof Uint8Array) {
      body = call.body as Uint8Array<ArrayBuffer>
      headers.set('content-type', 'application/octet-stream')
    } else if (call.body !== undefined) {
      body = JSON.stringify(call.body)
      headers.set('content-type', 'application/json')
    }
    const url = `${this.#origin}${routePath(template, call.params, call.query)}`
    const response = await this.#fetch(new Request(url, { method, headers, body, signal }))
    if (!response.ok) throw await errorOf(response)
    return response
  }

  /** A JSON route's answer. */
  async json<T>(method: string, template: string, call: RouteCall = {}): Promise<T> {
    const response = await this.open(method, template, call)
    if (response.status === 204) return undefined as T
    return (await response.json()) as T
  }
}
