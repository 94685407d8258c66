/**
 * A small typed client for the public HTTP surface (shapes from schema/wire), shared by the bundled
 * page and the CLI. It uses only `fetch`; the token travels in the Authorization header, never in a URL. Every non-2xx
 * answer becomes an `ApiError` carrying the server's `{error:{code,message}}`; a server that cannot
 * be reached at all becomes an `UnreachableError`.
 */
import type { ScreenProjection } from '../../schema/wire/display.ts'
import type { OutputPage } from '../../schema/wire/output.ts'
import type { Session, SessionList, Workspace, WorkspaceList } from '../../schema/wire/registry.ts'
import type { Host } from '../../schema/wire/hosts.ts'
import type { CloseResult, TerminalInfo } from '../../schema/wire/terminals.ts'
import type { TokenRecord } from '../../schema/wire/tokens.ts'
import type { RunDetail, RunList, RunSummary, StartWorkflow } from '../../schema/wire/workflows.ts'
import { readSse, type SseMessage } from './sse.ts'

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message)
    this.name = 'ApiError'
  }
}

/**
 * A request that got no answer: the network failed, or the server went silent. It may or may not
 * have arrived, so its outcome is unknown (docs/retrying.md).
 */
export class TransportError extends Error {
  override name = 'TransportError'
}

export class UnreachableError extends TransportError {
  override name = 'UnreachableError'
  constructor(
    readonly url: string,
    cause: unknown,
  ) {
    super(`cannot reach the termkeep server at ${url}${describeCause(cause)}`)
  }
}

/**
 * Whether a failed request may still have been carried out: no answer came (TransportError), or
 * the server, or a gateway in front of it, answered 502/503/504 (a stalled sidecar may still carry
 * it out when it resumes). Such a request is retried only when it is safe to repeat: idempotent,
 * or sent with an Idempotency-Key.
 */
export function outcomeUnknown(error: unknown): boolean {
  return (
    error instanceof TransportError || (error instanceof ApiError && (error.status === 502 || error.status === 503 || error.status === 504))
  )
}

function describeCause(cause: unknown): string {
  const inner = (cause as { cause?: { code?: string; message?: string } })?.cause
  const detail = inner?.code ?? inner?.message ?? (cause as Error)?.message
  return detail ? ` (${detail})` : ''
}

export interface ClientOptions {
  /** Server origin, e.g. `http://127.0.0.1:8787`; '' for same-origin requests from the page. */
  url: string
  token: string
  fetch?: typeof fetch
}

export interface RequestOptions {
  json?: unknown
  body?: BodyInit
  headers?: Record<string, string>
  signal?: AbortSignal
}

const seg = encodeURIComponent

export class TermkeepClient {
  readonly url: string
  readonly #token: string
  readonly #fetch: typeof fetch

  constructor({ url, token, fetch: fetchImpl }: ClientOptions) {
    this.url = url.replace(/\/+$/, '')
    this.#token = token
    this.#fetch = fetchImpl ?? ((input, init) => fetch(input, init))
  }

  async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    const headers: Record<string, string> = { authorization: `Bearer ${this.#token}`, ...options.headers }
    let body = options.body
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json'
      body = JSON.stringify(options.json)
    }
    let response: Response
    try {
      response = await this.#fetch(`${this.url}${path}`, { method, headers, body, signal: options.signal })
    } catch (cause) {
      if (options.signal?.aborted) throw cause
      throw new UnreachableError(this.url || 'this page’s origin', cause)
    }
    if (!response.ok) throw await errorOf(response)
    return response
  }

  async json<T>(method: string, path: string, options: RequestOptions = {}): Promise<T> {
    const response = await this.request(method, path, options)
    if (response.status === 204) return undefined as T
    return (await response.json()) as T
  }

  /** Opens an SSE stream; resolves once the server answered 2xx (errors throw before any event). */
  async stream(path: string, options: { lastEventId?: string; signal?: AbortSignal } = {}): Promise<AsyncGenerator<SseMessage>> {
    const headers: Record<string, string> = { accept: 'text/event-stream' }
    if (options.lastEventId !== undefined) headers['last-event-id'] = options.lastEventId
    const response = await this.request('GET', path, { headers, signal: options.signal })
    if (!response.body) throw new ApiError(response.status, 'request/invalid', 'the stream has no body')
    return readSse(response.body, options.signal)
  }

  // ── registry ──────────────────────────────────────────────────────────────
  async registry(): Promise<WorkspaceList> {
    return this.json('GET', '/v1/workspaces')
  }

  /** `host`: the host the directory is on, by id or name (needed when there are several). */
  async createWorkspace(path: string, title?: string, host?: string): Promise<{ workspace: Workspace; created: boolean }> {
    const json = { path, ...(title === undefined ? {} : { title }), ...(host === undefined ? {} : { host }) }
    return this.json('POST', '/v1/workspaces', { json })
  }

  /** A new session in a workspace: it lives on the workspace's host, in its directory. */
  async createSessionIn(workspaceId: string): Promise<Session> {
    return (await this.json<{ session: Session }>('POST', '/v1/sessions', { json: { workspace: workspaceId } })).session
  }

  /** `host`: the host's id or name (needed when there are several). */
  async createSession(cwd: string, title?: string, host?: string): Promise<Session> {
    const json = { cwd, ...(title ? { title } : {}), ...(host === undefined ? {} : { host }) }
    return (await this.json<{ session: Session }>('POST', '/v1/sessions', { json })).session
  }

  async hosts(): Promise<Host[]> {
    return (await this.json<{ hosts: Host[] }>('GET', '/v1/hosts')).hosts
  }

  async renameWorkspace(wid: string, title: string): Promise<Workspace> {
    return (await this.json<{ workspace: Workspace }>('PATCH', `/v1/workspaces/${seg(wid)}`, { json: { title } })).workspace
  }

  /** Unregisters a workspace: nothing on disk changes and its sessions stay recorded. */
  async removeWorkspace(wid: string): Promise<void> {
    await this.request('DELETE', `/v1/workspaces/${seg(wid)}`)
  }

  /** Archives (`true`) or unarchives a session; returns the archived session ids. */
  async archiveSession(sid: string, archived: boolean): Promise<string[]> {
    const result = await this.json<{ archivedSessionIds: string[] }>(archived ? 'POST' : 'DELETE', `/v1/sessions/${seg(sid)}/archive`)
    return result.archivedSessionIds
  }

  async session(sid: string): Promise<Session> {
    return (await this.json<{ session: Session }>('GET', `/v1/sessions/${seg(sid)}`)).session
  }

  /** Every session the token may touch, newest first (all pages); `workspace: 'none'` for those in none. */
  async sessions(query: { workspace?: string } = {}): Promise<Session[]> {
    const all: Session[] = []
    let cursor: string | null = null
    do {
      const params = new URLSearchParams(query.workspace === undefined ? {} : { workspace: query.workspace })
      if (cursor !== null) params.set('cursor', cursor)
      const page: SessionList = await this.json('GET', `/v1/sessions${params.size > 0 ? `?${params}` : ''}`)
      all.push(...page.sessions)
      cursor = page.next
    } while (cursor !== null)
    return all
  }

  // ── terminals ─────────────────────────────────────────────────────────────
  async terminals(sid: string): Promise<TerminalInfo[]> {
    return (await this.json<{ terminals: TerminalInfo[] }>('GET', `/v1/sessions/${seg(sid)}/terminals`)).terminals
  }

  async terminal(sid: string, tid: string): Promise<TerminalInfo> {
    return this.json('GET', terminalPath(sid, tid))
  }

  async createTerminal(
    sid: string,
    tid: string,
    body: { cols: number; rows: number; shell?: string; title?: string },
  ): Promise<TerminalInfo> {
    return this.json('PUT', terminalPath(sid, tid), { json: body })
  }

  async renameTerminal(sid: string, tid: string, title: string): Promise<TerminalInfo> {
    return this.json('PATCH', terminalPath(sid, tid), { json: { title } })
  }

  async closeTerminal(sid: string, tid: string): Promise<CloseResult> {
    return this.json('DELETE', terminalPath(sid, tid))
  }

  /** The plain-text projection of a live terminal's screen. */
  async screen(sid: string, tid: string): Promise<ScreenProjection> {
    return this.json('GET', `${terminalPath(sid, tid)}/screen`)
  }

  /** One readOutput page after the native sequence `after`. */
  async output(sid: string, tid: string, after: number, limit?: number): Promise<OutputPage> {
    return this.json('GET', `${terminalPath(sid, tid)}/output?after=${after}${limit === undefined ? '' : `&limit=${limit}`}`)
  }

  /** `key`: the batch's Idempotency-Key, so that a retry of it is typed at most once. */
  async input(sid: string, tid: string, attachment: string, data: Uint8Array, key?: string): Promise<void> {
    const headers: Record<string, string> = { 'content-type': 'application/octet-stream', 'termkeep-attachment': attachment }
    if (key !== undefined) headers['idempotency-key'] = key
    await this.request('POST', `${terminalPath(sid, tid)}/input`, { body: data as Uint8Array<ArrayBuffer>, headers })
  }

  async resize(sid: string, tid: string, attachment: string, cols: number, rows: number): Promise<void> {
    await this.request('POST', `${terminalPath(sid, tid)}/resize`, {
      json: { cols, rows },
      headers: { 'termkeep-attachment': attachment },
    })
  }

  // ── tokens (admin) ────────────────────────────────────────────────────────
  async tokens(): Promise<TokenRecord[]> {
    return (await this.json<{ tokens: TokenRecord[] }>('GET', '/v1/tokens')).tokens
  }

  async revokeToken(id: string): Promise<void> {
    await this.request('DELETE', `/v1/tokens/${seg(id)}`)
  }
  // ── workflows ─────────────────────────────────────────────────────────────
  async workflows(sid: string, query: { limit?: number; before?: string } = {}): Promise<RunList> {
    const params = new URLSearchParams()
    if (query.limit !== undefined) params.set('limit', String(query.limit))
    if (query.before !== undefined) params.set('before', query.before)
    return this.json('GET', `${workflowsPath(sid)}${params.size > 0 ? `?${params}` : ''}`)
  }

  async workflow(sid: string, rid: string): Promise<RunDetail> {
    return this.json('GET', `${workflowsPath(sid)}/${seg(rid)}`)
  }

  /** `key`: an Idempotency-Key, so that a retry answers the run the first attempt started. */
  async startWorkflow(sid: string, body: StartWorkflow, key?: string): Promise<RunSummary> {
    const headers: Record<string, string> = key === undefined ? {} : { 'idempotency-key': key }
    return (await this.json<{ run: RunSummary }>('POST', workflowsPath(sid), { json: body, headers })).run
  }

  /** Answers once the run settled (its members' terminals closed). */
  async cancelWorkflow(sid: string, rid: string, reason?: string): Promise<RunSummary> {
    return (await this.json<{ run: RunSummary }>('POST', `${workflowsPath(sid)}/${seg(rid)}/cancel`, { json: reason ? { reason } : {} }))
      .run
  }

  /** The run's events (SSE); `lastEventId` resumes after that sequence. */
  workflowEvents(
    sid: string,
    rid: string,
    options: { lastEventId?: string; signal?: AbortSignal } = {},
  ): Promise<AsyncGenerator<SseMessage>> {
    return this.stream(`${workflowsPath(sid)}/${seg(rid)}/events`, options)
  }
}

export function workflowsPath(sid: string): string {
  return `/v1/sessions/${seg(sid)}/workflows`
}

export function terminalPath(sid: string, tid: string): string {
  return `/v1/sessions/${seg(sid)}/terminals/${seg(tid)}`
}

async function errorOf(response: Response): Promise<ApiError> {
  const body = (await response.json().catch(() => undefined)) as { error?: Record<string, unknown> } | undefined
  const error = body?.error
  if (error && typeof error.code === 'string') {
    const { code, message, ...details } = error
    return new ApiError(response.status, code, typeof message === 'string' ? message : code, details)
  }
  return new ApiError(response.status, `http/${response.status}`, `the server answered ${response.status} ${response.statusText}`)
}
