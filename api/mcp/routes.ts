/**
 * `/mcp`: the Model Context Protocol over Streamable HTTP, stateless. Every POST is answered by a
 * fresh SDK server and transport (WebStandardStreamableHTTPServerTransport: Web APIs only, the
 * same on Node, Deno and Workers) for the caller's token, so any API instance serves any request
 * and nothing is kept between them. GET (a standalone notification stream) and DELETE (ending a
 * session) have nothing to serve without sessions: 405, as the transport specification allows.
 */
import { Hono, type Context } from 'hono'
import { describeRoute } from 'hono-openapi'
import { TermkeepError } from '../../schema/errors.ts'
import { JsonRpcBody, MCP_BATCHES_REMOVED_IN, McpPostHeaders } from '../../schema/wire/mcp.ts'
import { AUTHENTICATED, guard } from '../auth/guard.ts'
import type { AppEnv } from '../deps.ts'
import { errorResponse } from '../errors.ts'
import { error, sse } from '../openapi.ts'
import { validate } from '../validate.ts'
import { Catalog } from './catalog.ts'
import { Dispatcher } from './dispatch.ts'
import { WebStandardStreamableHTTPServerTransport } from './sdk.ts'
import { refuseMalformedParams } from './params.ts'
import { mcpServer } from './server.ts'
import { TOOLS } from './tools.ts'

const tags = ['mcp']

/** The transport's own refusals (a JSON-RPC error body) in termkeep's error shape. */
async function refusal(c: Context, response: Response): Promise<Response> {
  const body = (await response.json().catch(() => undefined)) as { error?: { code?: number; message?: string } } | undefined
  const message = body?.error?.message ?? `the MCP transport answered ${response.status}`
  if (response.status >= 500) {
    console.error('termkeep api: MCP transport failed', response.status, message)
    return errorResponse(c, new TermkeepError('internal/error', 'internal error'))
  }
  return errorResponse(c, new TermkeepError('request/invalid', message, { jsonrpcCode: body?.error?.code }))
}

function notAllowed(c: Context): Response {
  c.header('allow', 'POST')
  return errorResponse(
    c,
    new TermkeepError(
      'request/method-not-allowed',
      'this MCP endpoint is stateless: POST each message; there is no stream to GET and no session to DELETE',
    ),
  )
}

const NOT_ALLOWED = { 405: error('stateless: no standalone stream, no session (`request/method-not-allowed`)') }

/** `app` is the whole API: tools call its routes through `app.fetch`. */
export function mcpRoutes(app: Hono<AppEnv>): Hono<AppEnv> {
  const catalog = new Catalog(app, TOOLS)
  const fetch = (request: Request) => app.fetch(request)
  return new Hono<AppEnv>()
    .post(
      '/mcp',
      describeRoute({
        tags,
        summary:
          'MCP (Streamable HTTP, stateless): one JSON-RPC message per POST (a batch too for a 2025-03-26 client); tools/list shows the tools this token may call',
        description:
          "Each tool calls the HTTP routes it mirrors with this request's token (`x-termkeep-grant` per route). See docs/mcp.md.",
        responses: {
          200: sse('the JSON-RPC answer', ['message']),
          202: { description: 'a notification or response was accepted' },
        },
      }),
      guard(AUTHENTICATED),
      validate('header', McpPostHeaders),
      validate('json', JsonRpcBody, { arrays: true }),
      async (c) => {
        const body = c.req.valid('json')
        const version = c.req.valid('header')['mcp-protocol-version']
        // A client that names no version speaks 2025-03-26, where batches MUST be accepted; one
        // that names a later one does not have them.
        if (Array.isArray(body) && version !== undefined && version >= MCP_BATCHES_REMOVED_IN) {
          throw new TermkeepError(
            'request/invalid',
            `JSON-RPC batches are not part of MCP ${version} (removed in ${MCP_BATCHES_REMOVED_IN}): send one message per POST`,
          )
        }
        const authorization = c.req.header('authorization')!
        const requestSignal = c.req.raw.signal
        const origin = new URL(c.req.url).origin
        const server = mcpServer({
          catalog,
          authority: c.var.auth,
          dispatcher: (signal) => new Dispatcher(fetch, authorization, signal, origin),
          requestSignal,
          tuning: { retryMs: c.var.deps.tuning?.mcpRetryMs },
        })
        const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined })
        await server.connect(transport)
        refuseMalformedParams(transport)
        requestSignal.addEventListener('abort', () => void server.close(), { once: true })
        const response = await transport.handleRequest(c.req.raw, { parsedBody: body })
        return response.ok ? response : refusal(c, response)
      },
    )
    .get('/mcp', describeRoute({ tags, summary: 'Not offered (stateless MCP)', responses: NOT_ALLOWED }), guard(AUTHENTICATED), notAllowed)
    .delete(
      '/mcp',
      describeRoute({ tags, summary: 'Not offered (stateless MCP)', responses: NOT_ALLOWED }),
      guard(AUTHENTICATED),
      notAllowed,
    )
}
