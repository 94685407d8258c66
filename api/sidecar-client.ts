/**
 * The API's one way to reach the sidecar. Every call carries the shared secret; an unreachable
 * or silent sidecar becomes `sidecar/unavailable` quickly, and a typed error from the sidecar is
 * rebuilt as the same TermkeepError on this side of the wire.
 */
import { errorFromBody, TermkeepError } from '../schema/errors.ts'
import { deriveSigningKey } from '../common/crypto.ts'
import { CLOSE_DRAIN_MS, CLOSE_KILL_GRACE_MS } from '../schema/limits.ts'
import {
  SIDECAR_CONNECT_TIMEOUT_MS,
  SIDECAR_LIVENESS_PROBE_MS,
  SIDECAR_LIVENESS_TIMEOUT_MS,
  SIDECAR_SLOW_CALL_TIMEOUT_MS,
} from './tuning.ts'
import { afterDeadline, SidecarLiveness } from './sidecar-liveness.ts'
import { IDEMPOTENCY_KEY_HEADER, type Geometry } from '../schema/wire/common.ts'
import type {
  BytesQuery,
  DirectoryListing,
  FileBytes,
  FileStat,
  FileText,
  ListQuery,
  PathQuery,
  RelatedQuery,
  TextQuery,
} from '../schema/wire/files.ts'
import type { CommandOutput, CommandRun, RunCommand } from '../schema/wire/commands.ts'
import type { SidecarHealth } from '../schema/wire/health.ts'
import type { SearchQuery, SearchResult, SessionSearch } from '../schema/wire/search.ts'
import { OBSERVE_ENV_HEADER, type ObservationFacts } from '../schema/wire/observation.ts'
import { observationPath, type ObservationOperationName, type ObservationRequest } from '../schema/wire/observation-operations.ts'
import type { OutputPage } from '../schema/wire/output.ts'
import type { CanonicalPath } from '../schema/wire/paths.ts'
import {
  ATTACHMENT_HEADER,
  PRINCIPAL_HEADER,
  type CloseResult,
  type FollowControl,
  type Sender,
  type SendKeys,
  type SentKeys,
  type CreateTerminal,
  type RenameTerminal,
  type ShellList,
  type TerminalEnvironment,
  type TerminalInfo,
  type TerminalList,
} from '../schema/wire/terminals.ts'
import type { CancelWorkflow, RunStarted, StartWorkflow } from '../schema/wire/workflows.ts'

export interface SidecarClientOptions {
  url: string
  secret: string
  fetch?: typeof fetch
  /** The error a call that cannot reach the sidecar becomes (default `sidecar/unavailable`; a
   * host of several: `host/unavailable` naming it, api/hosts/fleet.ts). */
  unavailable?: (message: string) => TermkeepError
}

const sidecarUnavailable = (message: string) => new TermkeepError('sidecar/unavailable', message)

export class SidecarClient {
  readonly #url: string
  readonly #secret: string
  readonly #fetch: typeof fetch
  readonly #keys = new Map<string, Promise<CryptoKey>>()
  readonly #liveness: SidecarLiveness
  readonly #unavailable: (message: string) => TermkeepError

  constructor({ url, secret, fetch: fetchImpl, unavailable = sidecarUnavailable }: SidecarClientOptions) {
    this.#url = url.replace(/\/+$/, '')
    this.#secret = secret
    this.#fetch = fetchImpl ?? ((input, init) => fetch(input, init))
    this.#unavailable = unavailable
    // The probe goes around `request`: it must not wait for liveness itself.
    this.#liveness = new SidecarLiveness((signal) =>
      this.#fetch(`${this.#url}/v1/health`, { headers: { authorization: `Bearer ${this.#secret}` }, signal }),
    )
  }

  /**
   * Sends one request. `timeoutMs` (default SIDECAR_SLOW_CALL_TIMEOUT_MS) bounds only the time to
   * response headers; a streaming body afterwards is bounded by `signal` (the client's own
   * disconnect). A refused connection fails at once. An answer that is late is waited for while
   * the sidecar is alive (sidecar-liveness.ts): after SIDECAR_LIVENESS_PROBE_MS without headers,
   * and every as long again, the call asks; a sidecar that is not alive makes it 503 in seconds.
   */
  async request(
    path: string,
    init: RequestInit = {},
    timeoutMs = SIDECAR_SLOW_CALL_TIMEOUT_MS,
    { probe: probing = true } = {},
  ): Promise<Response> {
    const headers = new Headers(init.headers)
    headers.set('authorization', `Bearer ${this.#secret}`)
    const connect = new AbortController()
    const signal = init.signal ? AbortSignal.any([init.signal, connect.signal]) : connect.signal
    let settled = false
    let verdict: 'late' | 'silent' | undefined
    const giveUp = (why: 'late' | 'silent') => {
      if (settled) return // answered meanwhile: its body must not be cut
      verdict = why
      connect.abort(new Error(why === 'late' ? 'the sidecar did not answer in time' : 'the sidecar is not answering'))
    }
    const budget = afterDeadline(timeoutMs, () => giveUp('late'))
    let probe: ReturnType<typeof setTimeout> | undefined
    const probeSoon = () => {
      probe = setTimeout(async () => {
        const alive = await this.#liveness.alive()
        if (settled) return
        if (alive) probeSoon()
        else giveUp('silent')
      }, SIDECAR_LIVENESS_PROBE_MS)
    }
    if (probing) probeSoon()
    let response: Response
    try {
      response = await this.#fetch(`${this.#url}${path}`, { ...init, headers, signal })
    } catch (cause) {
      if (init.signal?.aborted) throw cause
      if (verdict === 'late') throw this.#unavailable(`the terminal sidecar did not answer within ${timeoutMs / 1000} s`)
      if (verdict === 'silent') {
        throw this.#unavailable(
          `the terminal sidecar is not answering (its health did not answer within ${SIDECAR_LIVENESS_TIMEOUT_MS / 1000} s)`,
        )
      }
      throw this.#unavailable(`the terminal sidecar is not reachable${reasonOf(cause)}`)
    } finally {
      settled = true
      budget.cancel()
      clearTimeout(probe)
    }
    this.#liveness.heard()
    if (!response.ok) throw await this.#errorOf(response)
    return response
  }

  /** A client of another sidecar over the same transport; `secret` defaults to this one's. */
  sibling(options: Omit<SidecarClientOptions, 'fetch' | 'secret'> & { secret?: string }): SidecarClient {
    return new SidecarClient({ ...options, secret: options.secret ?? this.#secret, fetch: this.#fetch })
  }

  async json<T>(path: string, init: RequestInit = {}, timeoutMs?: number, options?: { probe?: boolean }): Promise<T> {
    const response = await this.request(path, init, timeoutMs, options)
    return (await response.json()) as T
  }

  /** The sidecar's own health; it answers within SIDECAR_LIVENESS_TIMEOUT_MS or is taken for hung. */
  health(): Promise<SidecarHealth> {
    // It is the liveness answer itself: nothing to probe while it is out.
    return this.json<SidecarHealth>('/v1/health', {}, SIDECAR_LIVENESS_TIMEOUT_MS, { probe: false })
  }

  // ── Paths (schema/wire/paths.ts) ──────────────────────────────────────────

  canonicalize(path: string): Promise<CanonicalPath> {
    return this.json<CanonicalPath>('/v1/paths/canonicalize', jsonInit('POST', { path }))
  }

  // ── Live terminals (schema/wire/terminals.ts, schema/wire/output.ts) ──────

  environment(sid: string): Promise<TerminalEnvironment> {
    return this.json(`${session(sid)}/terminal-environment`)
  }

  shells(sid: string): Promise<ShellList> {
    return this.json(`${session(sid)}/shells`, {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  list(sid: string): Promise<TerminalList> {
    return this.json(`${session(sid)}/terminals`)
  }

  /** Idempotent create; `created` is false when the id already existed (sidecar answered 200). */
  async create(sid: string, tid: string, body: CreateTerminal): Promise<{ info: TerminalInfo; created: boolean }> {
    const response = await this.request(terminal(sid, tid), jsonInit('PUT', body), SIDECAR_SLOW_CALL_TIMEOUT_MS)
    return { info: (await response.json()) as TerminalInfo, created: response.status === 201 }
  }

  info(sid: string, tid: string): Promise<TerminalInfo> {
    return this.json(terminal(sid, tid))
  }

  rename(sid: string, tid: string, change: RenameTerminal): Promise<TerminalInfo> {
    return this.json(terminal(sid, tid), jsonInit('PATCH', change))
  }

  close(sid: string, tid: string): Promise<CloseResult> {
    return this.json(terminal(sid, tid), { method: 'DELETE' }, CLOSE_BUDGET_MS)
  }

  /** `from`: the follow attachment sending, and its principal (the caller's token id); `key`: the
   * batch's Idempotency-Key, if the client gave one. */
  async input(sid: string, tid: string, from: Sender, bytes: Uint8Array<ArrayBuffer>, key?: string): Promise<void> {
    const headers = new Headers({ 'content-type': 'application/octet-stream' })
    senderHeaders(headers, from)
    if (key !== undefined) headers.set(IDEMPOTENCY_KEY_HEADER, key)
    const response = await this.request(`${terminal(sid, tid)}/input`, { method: 'POST', headers, body: bytes })
    await response.body?.cancel()
  }

  /** Text and named keys in one write under control taken for it alone (POST …/keys). */
  sendKeys(sid: string, tid: string, from: Sender, request: SendKeys, key?: string): Promise<SentKeys> {
    const init = jsonInit('POST', request)
    senderHeaders(init.headers as Headers, from)
    if (key !== undefined) (init.headers as Headers).set(IDEMPOTENCY_KEY_HEADER, key)
    return this.json(`${terminal(sid, tid)}/keys`, init)
  }

  resize(sid: string, tid: string, from: Sender, geometry: Geometry): Promise<TerminalInfo> {
    const init = jsonInit('POST', geometry)
    senderHeaders(init.headers as Headers, from)
    return this.json(`${terminal(sid, tid)}/resize`, init, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  readOutput(sid: string, tid: string, query: { after: number; limit?: number }): Promise<OutputPage> {
    const params = new URLSearchParams({ after: String(query.after) })
    if (query.limit !== undefined) params.set('limit', String(query.limit))
    return this.json(`${terminal(sid, tid)}/output?${params}`, {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  /** SSE streams: the open upstream response, to relay as it arrives. `signal` tears it down. */
  follow(
    sid: string,
    tid: string,
    query: { attachment: string; control?: FollowControl; principal?: string; lastEventId?: string },
    signal: AbortSignal,
  ): Promise<Response> {
    const params = new URLSearchParams({ attachment: query.attachment })
    if (query.control !== undefined && query.control !== 'take') params.set('control', query.control)
    const init = streamInit(signal, query.lastEventId)
    if (query.principal !== undefined) (init.headers as Headers).set(PRINCIPAL_HEADER, query.principal)
    return this.request(`${terminal(sid, tid)}/follow?${params}`, init, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  retain(sid: string, tid: string, signal: AbortSignal): Promise<Response> {
    return this.request(`${terminal(sid, tid)}/retain`, streamInit(signal), SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  watchOutput(sid: string, tid: string, query: { after: number; lastEventId?: string }, signal: AbortSignal): Promise<Response> {
    const params = new URLSearchParams({ after: String(query.after) })
    return this.request(`${terminal(sid, tid)}/output/watch?${params}`, streamInit(signal, query.lastEventId), SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  // ── Commands (schema/wire/commands.ts) ────────────────────────────────────

  /** Types the command at the shell's prompt and answers once it ended (or `timeoutMs` passed):
   * the call's budget is the command's own, plus the usual allowance for the sidecar to answer. */
  runCommand(sid: string, tid: string, body: RunCommand, from: Sender): Promise<CommandRun> {
    const init = jsonInit('POST', body)
    senderHeaders(init.headers as Headers, from)
    return this.json(`${terminal(sid, tid)}/commands`, init, body.timeoutMs + SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  /** The text of a command the sidecar still holds (running, or just ended); 404 otherwise. */
  commandOutput(sid: string, tid: string, n: number): Promise<CommandOutput> {
    return this.json(`${terminal(sid, tid)}/commands/${n}/output`)
  }

  /** A command's exact bytes from the journal: the open response, its body streamed. */
  commandBytes(sid: string, tid: string, n: number, signal: AbortSignal): Promise<Response> {
    return this.request(`${terminal(sid, tid)}/commands/${n}/output.bin`, { signal }, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  watchCommands(sid: string, tid: string, query: { after: number; lastEventId?: string }, signal: AbortSignal): Promise<Response> {
    const params = new URLSearchParams({ after: String(query.after) })
    return this.request(
      `${terminal(sid, tid)}/commands/watch?${params}`,
      streamInit(signal, query.lastEventId),
      SIDECAR_SLOW_CALL_TIMEOUT_MS,
    )
  }

  /** Closes every live terminal of the session; each close waits for its processes' end. */
  closeSession(sid: string): Promise<{ closed: TerminalInfo[] }> {
    return this.json(`${session(sid)}/terminals`, { method: 'DELETE' }, CLOSE_BUDGET_MS)
  }

  // ── Search (schema/wire/search.ts) ────────────────────────────────────────

  search(sid: string, tid: string, query: SearchQuery): Promise<SearchResult> {
    const params = new URLSearchParams({ pattern: query.pattern, after: query.after, limit: String(query.limit) })
    return this.json(`${terminal(sid, tid)}/search?${params}`, {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  searchSession(sid: string, query: SearchQuery): Promise<SessionSearch> {
    const params = new URLSearchParams({ pattern: query.pattern, limit: String(query.limit) })
    return this.json(`${session(sid)}/search?${params}`, {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  // ── Terminal observation (schema/wire/observation.ts) ─────────────────────
  // `declared`: the caller's token's observeEnvironment names; the sidecar re-checks them.

  observationContext(sid: string, tid: string, declared: readonly string[]): Promise<ObservationFacts> {
    return this.json(`${terminal(sid, tid)}/observation`, { headers: observeHeaders(declared) }, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  /**
   * One JSON operation of the table (descendants, openFiles, …, readJsonLine): the open response,
   * whose body is ObservationResponse<K>, for the API to pass on unparsed (a 256-process tree is
   * ~100 KB that would otherwise be parsed and encoded again).
   */
  observe<K extends ObservationOperationName>(
    sid: string,
    tid: string,
    operation: K,
    request: ObservationRequest<K>,
    declared: readonly string[],
  ): Promise<Response> {
    const init = jsonInit('POST', request)
    observeHeaders(declared, init.headers as Headers)
    return this.request(`${terminal(sid, tid)}/${observationPath(operation)}`, init, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  /** SSE `snapshot` events; `query` is WatchDirectoryQuery's wire form. */
  watchDirectory(
    sid: string,
    tid: string,
    query: Record<string, string>,
    declared: readonly string[],
    signal: AbortSignal,
  ): Promise<Response> {
    const init = streamInit(signal)
    observeHeaders(declared, init.headers as Headers)
    return this.request(
      `${terminal(sid, tid)}/observation/files/watchDirectory?${new URLSearchParams(query)}`,
      init,
      SIDECAR_SLOW_CALL_TIMEOUT_MS,
    )
  }

  /** SSE `append` / `truncate` / `replace` events; `query` is FollowFileQuery's wire form,
   * `lastEventId` a cursor to resume after (it wins over the query's `after`). */
  followFile(
    sid: string,
    tid: string,
    query: Record<string, string>,
    declared: readonly string[],
    signal: AbortSignal,
    lastEventId?: string,
  ): Promise<Response> {
    const init = streamInit(signal, lastEventId)
    observeHeaders(declared, init.headers as Headers)
    return this.request(`${terminal(sid, tid)}/observation/files/follow?${new URLSearchParams(query)}`, init, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  // ── Workflows (schema/wire/workflows.ts) ──────────────────────────────────

  /**
   * Starts a run under `principal` (the caller's token id: readText() is re-checked against it).
   * With `key` (an Idempotency-Key), a repeat answers the run the key started: `created` false.
   */
  async startWorkflow(sid: string, body: StartWorkflow, principal: string, key?: string): Promise<RunStarted & { created: boolean }> {
    const init = jsonInit('POST', body)
    ;(init.headers as Headers).set(PRINCIPAL_HEADER, principal)
    if (key !== undefined) (init.headers as Headers).set(IDEMPOTENCY_KEY_HEADER, key)
    const response = await this.request(`${session(sid)}/workflows`, init, SIDECAR_SLOW_CALL_TIMEOUT_MS)
    return { ...((await response.json()) as RunStarted), created: response.status === 201 }
  }

  /** Cancels a run; answers once it settled (its members' terminals closed). */
  cancelWorkflow(sid: string, rid: string, body: CancelWorkflow): Promise<RunStarted> {
    return this.json(`${session(sid)}/workflows/${encodeURIComponent(rid)}/cancel`, jsonInit('POST', body), SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  /** The output as an asciicast v2 recording: the open response, its body streamed as it comes. */
  cast(sid: string, tid: string, signal: AbortSignal): Promise<Response> {
    return this.request(`${terminal(sid, tid)}/output.cast`, { signal }, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  // ── Workspace files (schema/wire/files.ts) ───────────────────────────────

  readFileText(sid: string, query: TextQuery): Promise<FileText> {
    return this.json(files(sid, 'text', query), {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  readFileBytes(sid: string, query: BytesQuery): Promise<FileBytes> {
    return this.json(files(sid, 'bytes', query), {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  readFileAll(sid: string, query: PathQuery): Promise<FileBytes> {
    return this.json(files(sid, 'all', query), {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  readFileRelated(sid: string, query: RelatedQuery): Promise<FileBytes> {
    return this.json(files(sid, 'related', query), {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  statFile(sid: string, query: PathQuery): Promise<FileStat> {
    return this.json(files(sid, 'stat', query), {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  listFiles(sid: string, query: ListQuery): Promise<DirectoryListing> {
    return this.json(files(sid, 'list', query), {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  /**
   * A files route's answer as the open response, for the API to pass on unparsed: a 32 MiB
   * readAll would otherwise be parsed and re-encoded (~3× its size in memory on an edge runtime).
   */
  fileResponse(sid: string, operation: 'text' | 'bytes' | 'all' | 'related' | 'stat' | 'list', query: FileQuery): Promise<Response> {
    // The sidecar reads (up to 32 MiB) before its headers go out: a loaded disk is not "unreachable".
    return this.request(files(sid, operation, query), {}, SIDECAR_SLOW_CALL_TIMEOUT_MS)
  }

  fileChanges(sid: string, signal: AbortSignal): Promise<Response> {
    return this.request(files(sid, 'changes', {}), streamInit(signal))
  }

  /** The signing key for one purpose (auth/secrets.ts `deriveSigningKey`), derived once. */
  signingKey(purpose: string): Promise<CryptoKey> {
    let key = this.#keys.get(purpose)
    if (!key) {
      key = deriveSigningKey(this.#secret, purpose)
      this.#keys.set(purpose, key)
    }
    return key
  }

  async #errorOf(response: Response): Promise<TermkeepError> {
    const body: unknown = await response.json().catch(() => undefined)
    const error = errorFromBody(body)
    // The sidecar refusing the API's secret, or lacking a route, is the API's deployment problem,
    // not the client's: never pass it on as the client's own 401/404.
    if (!error || error.code.startsWith('auth/') || error.code === 'route/not-found') {
      const why = error ? `${error.code}: ${error.message}` : `status ${response.status} without a typed error`
      return this.#unavailable(`the terminal sidecar refused the request (${why})`)
    }
    // A sidecar still starting (or rebuilding a screen) is, to this caller, its host unavailable.
    if (error.code === 'sidecar/unavailable' && this.#unavailable !== sidecarUnavailable) return this.#unavailable(error.message)
    return error
  }
}

/** ` (ECONNREFUSED)`: the transport's reason, for the logs and the caller. */
function reasonOf(error: unknown): string {
  const cause = (error as { cause?: { code?: unknown; message?: unknown } })?.cause
  const code = (error as { code?: unknown })?.code ?? cause?.code
  return typeof code === 'string' ? ` (${code})` : ''
}

/** Close kills (with a grace period), drains, then answers. */
const CLOSE_BUDGET_MS = CLOSE_KILL_GRACE_MS + CLOSE_DRAIN_MS + SIDECAR_CONNECT_TIMEOUT_MS

function session(sid: string): string {
  return `/v1/sessions/${encodeURIComponent(sid)}`
}

function terminal(sid: string, tid: string): string {
  return `${session(sid)}/terminals/${encodeURIComponent(tid)}`
}

type FileQuery = Record<string, string | number | undefined>

function files(sid: string, operation: string, query: FileQuery): string {
  const params = new URLSearchParams()
  for (const [key, value] of Object.entries(query)) if (value !== undefined) params.set(key, String(value))
  const search = params.size > 0 ? `?${params}` : ''
  return `${session(sid)}/files/${operation}${search}`
}

function senderHeaders(headers: Headers, from: Sender): void {
  if (from.attachment !== undefined) headers.set(ATTACHMENT_HEADER, from.attachment)
  if (from.principal !== undefined) headers.set(PRINCIPAL_HEADER, from.principal)
}

function observeHeaders(declared: readonly string[], headers = new Headers()): Headers {
  if (declared.length > 0) headers.set(OBSERVE_ENV_HEADER, declared.join(','))
  return headers
}

function jsonInit(method: string, body: unknown): RequestInit {
  return { method, headers: new Headers({ 'content-type': 'application/json' }), body: JSON.stringify(body) }
}

function streamInit(signal: AbortSignal, lastEventId?: string): RequestInit {
  const headers = new Headers({ accept: 'text/event-stream' })
  if (lastEventId !== undefined) headers.set('last-event-id', lastEventId)
  return { headers, signal }
}
