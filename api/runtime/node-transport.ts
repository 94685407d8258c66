/**
 * The Node entry's way to reach the sidecar: `fetch`'s shape over node:http.
 *
 * Why not Node's global fetch (undici): relaying a terminal's output, undici parsed every chunk in
 * its WASM HTTP parser, copied it out and pushed it through a second web stream; in the API
 * benchmark that was most of the relay's CPU. node:http parses natively and its Buffers go into
 * the Response's stream as they are. Only what SidecarClient sends is supported (string or byte
 * bodies); anything else is a TypeError, not a silent mis-send. Deno and Workers keep their fetch.
 */
import { Agent, request, type IncomingMessage } from 'node:http'
import { openStream, type StreamBody } from './node-stream.ts'

const agent = new Agent({ keepAlive: true })

const NULL_BODY_STATUSES = new Set([101, 204, 205, 304])
/** How a request fails on a kept-alive connection the server closed meanwhile, and how many
 * times it is sent again on another (each pooled connection may be as stale). */
const STALE_SOCKET = new Set(['ECONNRESET', 'EPIPE'])
const STALE_SOCKET_RETRIES = 2

function requestBody(body: RequestInit['body']): string | Uint8Array | undefined {
  if (body === undefined || body === null) return undefined
  if (typeof body === 'string' || body instanceof Uint8Array) return body
  if (body instanceof ArrayBuffer) return new Uint8Array(body)
  throw new TypeError('the sidecar transport sends only string and byte bodies')
}

function responseHeaders(message: IncomingMessage): Headers {
  const headers = new Headers()
  const raw = message.rawHeaders
  for (let i = 0; i + 1 < raw.length; i += 2) headers.append(raw[i]!, raw[i + 1]!)
  return headers
}

/** What a relay reads a body from: node:http's message, or a stream's own (node-stream.ts). */
export type NodeBody = IncomingMessage | StreamBody

/** A response body's socket stream and who reads it: the web stream, or a taker (takeNodeBody). */
interface BodyClaim {
  message: NodeBody
  signal: AbortSignal | undefined
  state: 'untouched' | 'web' | 'taken'
}

const claims = new WeakMap<Response, BodyClaim>()

/**
 * The socket stream under a nodeFetch response whose body nobody has started to read, handed over
 * once: the caller then reads it (and owns its backpressure), and the web body is never read.
 */
export function takeNodeBody(response: Response): NodeBody | undefined {
  const claim = claims.get(response)
  if (claim?.state !== 'untouched') return undefined
  claim.state = 'taken'
  return claim.message
}

/**
 * A web stream over the response. Nothing is read before the first read (so takeNodeBody can
 * still hand the socket over); after that the socket pauses whenever a chunk waits unread.
 */
function bodyStream(claim: BodyClaim): ReadableStream<Uint8Array> {
  const { message, signal } = claim
  let ended = false
  return new ReadableStream<Uint8Array>(
    {
      pull(controller) {
        if (claim.state === 'web') return void message.resume()
        if (claim.state === 'taken') return controller.error(new TypeError('the body was taken over by another reader'))
        claim.state = 'web'
        if (message.destroyed) return controller.error(new Error('the sidecar closed the response early'))
        message.on('data', (chunk: Buffer) => {
          controller.enqueue(chunk)
          if ((controller.desiredSize ?? 0) < 0) message.pause()
        })
        message.once('end', () => {
          ended = true
          controller.close()
        })
        // A socket that closes before the end (sidecar stopped, request aborted) errors the body.
        message.once('close', () => {
          if (!ended) controller.error(signal?.aborted ? signal.reason : new Error('the sidecar closed the response early'))
        })
        message.resume()
      },
      cancel() {
        ended = true
        message.destroy()
      },
    },
    { highWaterMark: 0 },
  )
}

/** A GET that accepts only an event stream is opened as one (node-stream.ts). */
function isStream(init: RequestInit, headers: Headers): boolean {
  return (init.method ?? 'GET') === 'GET' && headers.get('accept') === 'text/event-stream'
}

async function streamFetch(url: string, headers: Headers, signal: AbortSignal | undefined): Promise<Response> {
  const { status, statusText, headers: answered, body } = await openStream(new URL(url), headers, signal)
  if (NULL_BODY_STATUSES.has(status)) {
    body.destroy()
    return new Response(null, { status, statusText, headers: answered })
  }
  const claim: BodyClaim = { message: body, signal, state: 'untouched' }
  const response = new Response(bodyStream(claim), { status, statusText, headers: answered })
  claims.set(response, claim)
  return response
}

export const nodeFetch: typeof fetch = (input, init = {}) => {
  const url = input instanceof Request ? input.url : String(input)
  const given = new Headers(init.headers)
  if (isStream(init, given) && init.body == null) return streamFetch(url, given, init.signal ?? undefined)
  return new Promise<Response>((resolve, reject) => {
    const signal = init.signal ?? undefined
    if (signal?.aborted) return reject(signal.reason)
    let body: string | Uint8Array | undefined
    try {
      body = requestBody(init.body)
    } catch (error) {
      return reject(error)
    }
    const headers: Record<string, string> = {}
    given.forEach((value, name) => (headers[name] = value))
    const send = (retries: number) => {
      const outgoing = request(url, { method: init.method ?? 'GET', headers, agent })
      const onAbort = () => outgoing.destroy(signal?.reason)
      signal?.addEventListener('abort', onAbort, { once: true })
      outgoing.once('error', (error: NodeJS.ErrnoException) => {
        signal?.removeEventListener('abort', onAbort)
        // A kept-alive connection the sidecar closed as idle just as this request went out on it:
        // the sidecar dropped the request unread, so sending it again on another is safe.
        if (!signal?.aborted && outgoing.reusedSocket && STALE_SOCKET.has(error.code ?? '') && retries > 0) return send(retries - 1)
        reject(signal?.aborted ? signal.reason : error)
      })
      outgoing.once('response', (message) => {
        message.once('close', () => signal?.removeEventListener('abort', onAbort))
        const status = message.statusCode ?? 502
        const nullBody = NULL_BODY_STATUSES.has(status) || init.method === 'HEAD'
        if (nullBody) message.resume()
        const claim: BodyClaim = { message, signal, state: 'untouched' }
        const response = new Response(nullBody ? null : bodyStream(claim), {
          status,
          statusText: message.statusMessage,
          headers: responseHeaders(message),
        })
        if (!nullBody) claims.set(response, claim)
        resolve(response)
      })
      outgoing.end(body)
    }
    send(STALE_SOCKET_RETRIES)
  })
}
