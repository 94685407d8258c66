/**
 * The API's node:http server: @hono/node-server's listener serves the app, and the answers that
 * Node and the adapter give before the app sees a request come in the one error shape
 * `{error:{code,message}}` instead of an empty body:
 *
 * - the HTTP parser's errors (`clientError`): a request line and headers over Node's
 *   maxHeaderSize (431), a malformed request such as a NUL in a header or a bad Content-Length
 *   or chunk size (400), a request that did not arrive within Node's timeouts (408);
 * - a Host the adapter cannot build a URL from, and an HTTP/1.1 request without one (400);
 * - an `Expect` other than 100-continue (417).
 */
import { createServer, maxHeaderSize, STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { Duplex } from 'node:stream'
import { getRequestListener, RequestError } from '@hono/node-server'
import { TermkeepError } from '../../schema/errors.ts'

type FetchCallback = Parameters<typeof getRequestListener>[0]

/** Pure: the error for a failure of Node's HTTP parser (by its code, as Node's own answers are). */
export function clientErrorOf(error: Error & { code?: string; reason?: string }): TermkeepError {
  switch (error.code) {
    case 'HPE_HEADER_OVERFLOW':
      return new TermkeepError('request/headers-too-large', `the request line and headers are larger than ${maxHeaderSize} bytes`, {
        limit: maxHeaderSize,
      })
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return new TermkeepError('request/too-large', 'the chunk extensions of the request body are too large')
    case 'ERR_HTTP_REQUEST_TIMEOUT':
      return new TermkeepError('request/timeout', 'the request did not arrive whole in time')
    default:
      return new TermkeepError('request/invalid', `malformed HTTP request: ${error.reason ?? error.code ?? 'unreadable'}`)
  }
}

/** Pure: a whole HTTP/1.1 error response, for a socket that no response object owns. */
export function rawErrorResponse(error: TermkeepError): string {
  const body = JSON.stringify(error.toBody())
  return (
    `HTTP/1.1 ${error.status} ${STATUS_CODES[error.status]}\r\n` +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  )
}

/**
 * The `clientError` listener (the pattern of Node's documentation). A peer that reset or a socket
 * no longer writable hears nothing and is destroyed; so is one whose current response has begun,
 * which an error answer would corrupt. Otherwise the answer is written, and the socket destroyed
 * once it is flushed: the parser cannot go on after an error.
 */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  const current = (socket as Duplex & { _httpMessage?: ServerResponse | null })._httpMessage
  if (error.code === 'ECONNRESET' || !socket.writable || current?.headersSent) {
    socket.destroy()
    return
  }
  socket.end(rawErrorResponse(clientErrorOf(error)), () => socket.destroy())
}

function answer(response: ServerResponse, error: TermkeepError, headers: Record<string, string> = {}): void {
  const body = JSON.stringify(error.toBody())
  response.writeHead(error.status, { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), ...headers })
  response.end(body)
}

/** The adapter's answer when it cannot make a Request (a bad Host or URL), or the app threw. */
function adapterError(error: unknown): Response {
  if (!(error instanceof RequestError)) console.error('termkeep api: request failed', error)
  const known =
    error instanceof RequestError
      ? new TermkeepError('request/invalid', `the Host and request target make no valid URL: ${error.message}`)
      : new TermkeepError('internal/error', 'internal error')
  return Response.json(known.toBody(), { status: known.status })
}

/** A server for `fetch`; `hostname` is the Host assumed for an HTTP/1.0 request without one. */
export function createNodeServer(fetch: FetchCallback, hostname: string): Server {
  const listener = getRequestListener(fetch, { hostname, errorHandler: adapterError })
  // Node's own Host check would answer an empty 400; this one answers in the error shape.
  const server = createServer({ requireHostHeader: false }, (request: IncomingMessage, response: ServerResponse) => {
    if (request.headers.host === undefined && request.httpVersion === '1.1') {
      return answer(response, new TermkeepError('request/invalid', 'an HTTP/1.1 request needs a Host header'), { connection: 'close' })
    }
    return listener(request, response)
  })
  server.on('clientError', answerClientError)
  server.on('checkExpectation', (_request: IncomingMessage, response: ServerResponse) =>
    answer(response, new TermkeepError('request/expectation-failed', 'the only Expect supported is 100-continue')),
  )
  return server
}
