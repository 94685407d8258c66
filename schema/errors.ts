/**
 * The one error vocabulary. Every expected failure on either side of the wire is a
 * `TermkeepError` with one of these codes; the HTTP status comes from the code, so the API and
 * the sidecar answer alike and a client can rebuild the error from `{error:{code,message}}`.
 */

export const ERROR_STATUS = {
  // request shape
  'request/invalid': 400,
  'request/too-large': 413,
  /** The request line and headers are larger than Node's HTTP parser takes (about 16 KiB). */
  'request/headers-too-large': 431,
  /** An `Expect` other than 100-continue. */
  'request/expectation-failed': 417,
  /** The request did not arrive whole within the server's time for it. */
  'request/timeout': 408,
  'route/not-found': 404,
  /** The path exists, not for this method (GET and DELETE on the stateless `/mcp`). */
  'request/method-not-allowed': 405,
  /** A browser page of an origin the API does not answer (api/auth/origin.ts: DNS rebinding). */
  'request/origin-not-allowed': 403,
  /** A Host the API does not answer to (a name it was not configured for). */
  'request/host-not-allowed': 403,
  // authority
  'auth/missing-token': 401,
  'auth/invalid-token': 401,
  'auth/forbidden': 403,
  // registry
  'workspace/invalid-path': 400,
  'workspace/not-found': 404,
  'workspace/name-conflict': 409,
  'workspace/move-invalid': 400,
  'session/not-found': 404,
  'session/conflict': 409,
  // terminals
  'terminal/not-found': 404,
  'terminal/invalid-geometry': 400,
  'terminal/invalid-id': 400,
  'terminal/closed': 409,
  'terminal/unavailable': 410,
  'terminal/control-unavailable': 409,
  'terminal/limit-reached': 409,
  'terminal/input-too-large': 413,
  /** An input's Idempotency-Key already applied to other bytes (or from another attachment). */
  'terminal/idempotency-key-reused': 422,
  /** The program has not read the input already sent (MAX_INPUT_BACKLOG_BYTES); refused, dropped. */
  'terminal/input-backlog-full': 409,
  'terminal/spawn-failed': 500,
  'terminal/cleanup-failed': 500,
  'terminal/shell-not-allowed': 400,
  'output/invalid-cursor': 400,
  // commands (shell integration)
  /** Not typed: the shell is not waiting at an empty prompt (no marks yet, a command running, input
   * typed since the prompt, another run in flight, or no integration). */
  'command/not-at-prompt': 409,
  /** A command to run that is empty, too long, or holds NUL or a control character other than tab. */
  'command/invalid': 400,
  'command/not-found': 404,
  // names
  /** The name is taken in its scope (another session, or a terminal of the same session), or is
   * the id of another one. */
  'name/conflict': 409,
  /** A target is the id of one and the name of another. */
  'name/ambiguous': 409,
  'display/not-found': 404,
  // files
  'files/not-found': 404,
  'files/not-regular-file': 400,
  'files/not-directory': 400,
  'files/not-text': 400,
  'files/too-large': 413,
  'files/outside-workspace': 403,
  'files/bad-request': 400,
  'resource/not-found': 404,
  'token/not-found': 404,
  // terminal observation (agent providers)
  /** A handle that is malformed, tampered, from another terminal, session or incarnation, or
   * whose object (a process, a file) is gone. */
  'observe/handle-invalid': 404,
  /** An environment variable name the token did not declare (`observeEnvironment`). */
  'observe/undeclared': 403,
  /** The terminal's program has exited: there is no process tree left to observe. */
  'observe/not-running': 409,
  /** Too many watchers (watchDirectory, follow) open on one terminal. */
  'observe/limit-reached': 409,
  /** A `follow` cursor that no follow of this handle gave (forged, altered, or another handle's). */
  'observe/cursor-invalid': 400,
  // workflows
  'workflow/not-found': 404,
  /** The script does not parse (a syntax error), refused before anything is published. */
  'workflow/invalid-script': 400,
  /** The request names an agent profile the sidecar's TERMKEEP_AGENTS does not define. */
  'workflow/unknown-profile': 400,
  /** As many runs as a limit allows are alive already: the server's (MAX_RUNNING_WORKFLOWS), the
   * session's or the token's; `scope` says whose, `limit` and `running` how many. */
  'workflow/limit-reached': 409,
  /** This sidecar cannot confine scripts as configured (its engine does not load, or namespaces
   * are required and cannot be made): no run starts; `/v1/health` says why. Not a 503: nothing
   * is uncertain, and a retry would be refused alike until the operator acts. */
  'workflow/unavailable': 409,
  /** A start's Idempotency-Key already started a run with another request (script, input, …). */
  'workflow/idempotency-key-reused': 422,
  // hosts
  /** No registered host answers to the `host` a request names (id or name). */
  'host/unknown': 400,
  /** A new session must name its host (`host`): there are several, or a name several hosts share. */
  'host/ambiguous': 409,
  /** A request names a host that is not the host of the workspace it names (a workspace is a
   * directory on one host). */
  'host/mismatch': 409,
  /** The session's host does not answer (its sidecar is down, or its heartbeat stopped); `host`
   * and `hostName` name it. Other hosts are not affected; a retry may succeed once it is back. */
  'host/unavailable': 503,
  // infrastructure
  'sidecar/unavailable': 503,
  'database/unavailable': 503,
  'internal/error': 500,
} as const

export type ErrorCode = keyof typeof ERROR_STATUS
export type ErrorStatus = (typeof ERROR_STATUS)[ErrorCode]

/** Extra, code-specific facts (`limit`, `path`, `kind`, `reason`, …) travel next to code and message. */
export type ErrorDetails = Record<string, unknown>

export interface ErrorBody {
  error: { code: ErrorCode; message: string } & ErrorDetails
}

/** An expected failure. Bugs throw plain errors and become `internal/error`. */
export class TermkeepError extends Error {
  readonly code: ErrorCode
  readonly details: ErrorDetails

  constructor(code: ErrorCode, message: string, details: ErrorDetails = {}) {
    super(message)
    this.name = 'TermkeepError'
    this.code = code
    this.details = details
  }

  get status(): ErrorStatus {
    return ERROR_STATUS[this.code]
  }

  toBody(): ErrorBody {
    return { error: { ...this.details, code: this.code, message: this.message } }
  }
}

export function isErrorCode(value: unknown): value is ErrorCode {
  return typeof value === 'string' && Object.hasOwn(ERROR_STATUS, value)
}

/** Rebuilds the error a peer sent as `{error:{code,message,...}}`; undefined if it is not one. */
export function errorFromBody(body: unknown): TermkeepError | undefined {
  if (typeof body !== 'object' || body === null) return undefined
  const error = (body as { error?: unknown }).error
  if (typeof error !== 'object' || error === null) return undefined
  const { code, message, ...details } = error as Record<string, unknown>
  if (!isErrorCode(code)) return undefined
  return new TermkeepError(code, typeof message === 'string' ? message : code, details)
}

/** The realm every termkeep 401 names in its challenge. */
export const AUTH_REALM = 'termkeep'

/**
 * The `WWW-Authenticate` challenge a 401 carries (RFC 6750 §3), undefined for any other error: a
 * request with no credentials gets the plain `Bearer realm=…` (the RFC says no error code then),
 * one whose token was presented but is wrong gets `error="invalid_token"`. A client (the MCP
 * Inspector, an OAuth-aware SDK) reads this to tell a wrong token from a server asking it to log in.
 */
export function bearerChallenge(error: TermkeepError): string | undefined {
  if (error.status !== 401) return undefined
  const realm = `Bearer realm="${AUTH_REALM}"`
  if (error.code !== 'auth/invalid-token') return realm
  // error_description allows printable ASCII but the quote and the backslash.
  const description = error.message.replace(/["\\]/g, "'").replace(/[^\x20-\x7e]/g, '?')
  return `${realm}, error="invalid_token", error_description="${description}"`
}
