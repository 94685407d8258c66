/**
 * Malformed `params` are refused at termkeep's edge, as JSON-RPC -32602 (Invalid params) saying
 * what is wrong. The SDK parses a request against its method's schema before any handler runs,
 * and answers a failure as -32603 (Internal error) whose message is the parser's whole issue list
 * (its known upstream behaviour): a client learns neither that the fault is its own nor where.
 * So each request is checked here, against the SDK's own schema for its method, between the
 * transport and the server; a valid one goes on untouched.
 */
import {
  CallToolRequestSchema,
  ErrorCode,
  InitializeRequestSchema,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  PingRequestSchema,
  ReadResourceRequestSchema,
  type WebStandardStreamableHTTPServerTransport,
} from './sdk.ts'

interface Checked {
  safeParse(value: unknown): { success: true } | { success: false; error: { issues: { path: PropertyKey[]; message: string }[] } }
}

/** The methods this server answers, by the SDK's schema of each. */
const SCHEMAS: Record<string, Checked> = {
  initialize: InitializeRequestSchema,
  ping: PingRequestSchema,
  'tools/list': ListToolsRequestSchema,
  'tools/call': CallToolRequestSchema,
  'resources/list': ListResourcesRequestSchema,
  'resources/templates/list': ListResourceTemplatesRequestSchema,
  'resources/read': ReadResourceRequestSchema,
}

/** Issues named in one message: enough to fix the call, not a dump. */
const SHOWN_ISSUES = 3

interface Request {
  jsonrpc: '2.0'
  id: string | number
  method: string
  params?: unknown
}

function isRequest(message: unknown): message is Request {
  const m = message as Partial<Request> | null
  return typeof m === 'object' && m !== null && typeof m.method === 'string' && (typeof m.id === 'string' || typeof m.id === 'number')
}

/** Pure: what is wrong with a request's params for its method, or undefined when nothing is (or
 * the method is not one this server answers: the SDK says so itself). */
export function paramsProblem(message: unknown): string | undefined {
  if (!isRequest(message)) return undefined
  const schema = SCHEMAS[message.method]
  const checked = schema?.safeParse(message)
  if (!checked || checked.success) return undefined
  const issues = checked.error.issues
  const shown = issues.slice(0, SHOWN_ISSUES).map((issue) => `${issue.path.map(String).join('.') || 'params'}: ${issue.message}`)
  const more = issues.length > SHOWN_ISSUES ? ` (and ${issues.length - SHOWN_ISSUES} more)` : ''
  return `invalid params for ${message.method}: ${shown.join('; ')}${more}`
}

/** Answers each request with malformed params -32602 itself; call after the server connected. */
export function refuseMalformedParams(transport: WebStandardStreamableHTTPServerTransport): void {
  const deliver = transport.onmessage
  transport.onmessage = (message, extra) => {
    const problem = paramsProblem(message)
    if (problem === undefined) return deliver?.(message, extra)
    const id = (message as Request).id
    void transport.send({ jsonrpc: '2.0', id, error: { code: ErrorCode.InvalidParams, message: problem } })
  }
}
