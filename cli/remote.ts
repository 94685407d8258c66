/**
 * What the client commands (`ls`, `attach`, `display`) share: where the server is and which token
 * to send (flags first, then TERMKEEP_URL / TERMKEEP_TOKEN), a client that checks the server
 * really answers as termkeep does, and one-line messages for the ways a request can fail before it
 * does anything useful.
 */
import { ApiError, TermkeepClient, TransportError, UnreachableError, type RequestOptions } from '../web/client/api.ts'
import { self } from './self.ts'
import { CommandError, UsageError } from './usage.ts'

/**
 * How long a request may wait for the server: the whole answer of a plain request, the response
 * headers of a stream (a stream's body may rightly stay quiet for long). A server that accepts
 * connections but never answers must not hang the command; a termkeep server answers in
 * milliseconds, so this only has to cover slow networks.
 */
export const REQUEST_TIMEOUT_MS = 30_000

export const REMOTE_OPTIONS = {
  url: { type: 'string' },
  token: { type: 'string' },
  'request-timeout': { type: 'string' },
} as const

export const REMOTE_USAGE = `  --url URL                 the termkeep server (default: TERMKEEP_URL, else http://127.0.0.1:8787)
  --token TOKEN             a token with the grants the command needs (default: TERMKEEP_TOKEN)
  --request-timeout SECS    give up on a server that does not answer (default ${REQUEST_TIMEOUT_MS / 1000})`

/** The server answered, but not as a termkeep server does (HTML, an empty body, a foreign error). */
export class NotTermkeepError extends Error {
  override name = 'NotTermkeepError'
  constructor(url: string, answer: string) {
    super(`${url} is not a termkeep server (it answered ${answer})`)
  }
}

/** The server did not answer within the request timeout (so the request's outcome is unknown). */
export class NoAnswerError extends TransportError {
  override name = 'NoAnswerError'
  constructor(url: string, seconds: number) {
    super(`no answer from ${url} within ${seconds} s`)
  }
}

/** Requests started and not yet settled, by URL: what main reports if the process runs dry. */
const pending = new Map<symbol, string>()

/** The server of a request still waiting for an answer, if any. */
export function pendingRequestUrl(): string | undefined {
  return pending.values().next().value
}

/**
 * The shared client plus the checks a command line needs and a page does not: a timeout, and an
 * answer that is not termkeep's (wrong content type, unparsable JSON, an error without termkeep's
 * error body) becomes a NotTermkeepError instead of a SyntaxError deep in a command.
 */
export class CliClient extends TermkeepClient {
  constructor(
    url: string,
    token: string,
    readonly timeoutMs = REQUEST_TIMEOUT_MS,
  ) {
    super({ url, token })
  }

  override async request(method: string, path: string, options: RequestOptions = {}): Promise<Response> {
    // A request that accepts something other than JSON (an event stream, a recording) is streamed:
    // its answer must be of that type, and only its headers are awaited here.
    const accept = options.headers?.accept
    const streaming = accept !== undefined && accept !== 'application/json'
    const timeout = new AbortController()
    // Unref'd: a connection that fetch abandons without settling (a server that hangs up at once)
    // must let the event loop run dry, which main reports, rather than wait out the timeout.
    const timer = setTimeout(() => timeout.abort(), this.timeoutMs).unref()
    const signal = options.signal ? AbortSignal.any([options.signal, timeout.signal]) : timeout.signal
    const key = Symbol(path)
    pending.set(key, this.url)
    try {
      const response = await super.request(method, path, { ...options, signal })
      const type = response.headers.get('content-type') ?? 'no content type'
      if (streaming) {
        if (!type.startsWith(accept)) throw new NotTermkeepError(this.url, `${response.status} with ${type}`)
        return response
      }
      const text = await response.text()
      if (response.status === 204) return new Response(null, response)
      if (!type.startsWith('application/json') || !parses(text)) throw new NotTermkeepError(this.url, `${response.status} with ${type}`)
      return new Response(text, response)
    } catch (error) {
      if (timeout.signal.aborted && !options.signal?.aborted) throw new NoAnswerError(this.url, this.timeoutMs / 1000)
      // errorOf names an error body that is not termkeep's `{error:{code}}` after the bare status.
      if (error instanceof ApiError && error.code === `http/${error.status}`)
        throw new NotTermkeepError(this.url, error.message.replace(/^the server answered /, ''))
      throw error
    } finally {
      clearTimeout(timer)
      pending.delete(key)
    }
  }
}

function parses(text: string): boolean {
  try {
    JSON.parse(text)
    return true
  } catch {
    return false
  }
}

export function remoteClient(
  values: { url?: string; token?: string; 'request-timeout'?: string },
  env: NodeJS.ProcessEnv = process.env,
): CliClient {
  // A variable set to nothing counts as unset, as `${VAR:-default}` has it in a shell.
  const url = values.url ?? (env.TERMKEEP_URL || `http://127.0.0.1:${env.PORT || 8787}`)
  const token = values.token ?? (env.TERMKEEP_TOKEN || undefined)
  if (!/^https?:\/\/[^/]/.test(url)) throw new CommandError(`termkeep: the server URL must start with http:// or https:// (got "${url}")`)
  if (!token) throw new CommandError(`termkeep: no token: pass --token or set TERMKEEP_TOKEN (\`${self()} token create\` mints one)`)
  return new CliClient(url, token, seconds(values['request-timeout'], '--request-timeout', REQUEST_TIMEOUT_MS))
}

/** A `--flag SECONDS` value in milliseconds, `fallback` when the flag is absent. */
export function seconds(value: string | undefined, flag: string, fallback: number): number {
  if (value === undefined) return fallback
  const n = Number(value)
  if (!(n > 0) || !Number.isFinite(n)) throw new UsageError(`termkeep: ${flag} takes a number of seconds > 0 (got "${value}")`)
  return n * 1000
}

/** The one line to print for an error from a client command, or undefined if it is a bug. */
export function describeRemoteError(error: unknown): string | undefined {
  if (error instanceof UnreachableError) return `termkeep: ${error.message}; check --url or TERMKEEP_URL`
  if (error instanceof NotTermkeepError) return `termkeep: ${error.message}; check --url or TERMKEEP_URL`
  if (error instanceof NoAnswerError) return `termkeep: ${error.message}; is it a termkeep server? (--request-timeout sets the wait)`
  if (error instanceof ApiError) {
    if (error.status === 401) return `termkeep: the server refused the token (${error.code}); check --token or TERMKEEP_TOKEN`
    return `termkeep: ${error.message} (${error.code})`
  }
  return undefined
}

/** describeRemoteError's line, or "termkeep: <message>" for any other error: for a message that
 * goes on with what the failure means (input not sent, a run that may have started). */
export function remoteErrorLine(error: unknown): string {
  return describeRemoteError(error) ?? `termkeep: ${(error as Error)?.message ?? String(error)}`
}
