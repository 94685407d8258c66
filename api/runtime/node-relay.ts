/**
 * Relayed SSE streams on Node without web streams. On Node the sidecar's response arrives over
 * node:http (./node-transport.ts); a web-stream relay passes each chunk through two streams and
 * @hono/node-server's reader loop, which in the API benchmark cost the relay ~300 ms of CPU per
 * 100 MiB, beside a sidecar that needs about as much to produce the stream. Here the sidecar's
 * socket stream is written straight into the client's response, with Node's own backpressure
 * (the upstream pauses while the client's socket is full). The relay's bookkeeping (heartbeats
 * between events, the token re-check, cancelling the upstream) is the same SseRelay the web path
 * runs, so both carriers behave alike.
 */
import { ServerResponse } from 'node:http'
import type { Http2Bindings, HttpBindings } from '@hono/node-server'
import { RESPONSE_ALREADY_SENT } from '@hono/node-server/utils/response'
import { relayOf, type SseRelay } from '../sse.ts'
import { STREAM_READ_BYTES } from './node-stream.ts'
import { takeNodeBody, type NodeBody } from './node-transport.ts'

/**
 * Bytes a relayed stream may hold for a slow client before the upstream pauses. Pausing at the
 * response's own high-water mark (16 KiB) stopped the upstream on nearly every chunk, so reading
 * and writing never overlapped.
 */
const RELAY_BUFFER_BYTES = 256 * 1024
/** Bytes one relayed stream may write in one event-loop turn (see pipe): one socket read's worth.
 * With node:http's 64 KiB reads and 200 streams of a flooding terminal (measured under load), 64 KiB
 * drained them faster than 256 KiB (14–16 s against 17–20 s for 4.5 GB) and kept the API's other
 * answers at p99 0.3–0.6 s against 1.3–1.6 s. A stream's reads are now larger (node-stream.ts),
 * each costing far less per byte; the 200-stream case was not measured again. */
export const RELAY_TURN_BYTES = STREAM_READ_BYTES

type FetchHandler = (request: Request, env: HttpBindings | Http2Bindings) => Response | Promise<Response>

/**
 * Wraps an app's fetch for @hono/node-server: a relayed stream whose upstream body is still unread
 * is written to the Node response directly (after the app and its middleware made the response,
 * so its status and headers are theirs); every other response (and any over HTTP/2) is returned
 * as it was.
 */
export function withNodeRelays(fetchApp: FetchHandler): FetchHandler {
  return (request, env) => {
    const result = fetchApp(request, env)
    return result instanceof Promise ? result.then((response) => carry(response, env.outgoing)) : carry(result, env.outgoing)
  }
}

function carry(response: Response, outgoing: HttpBindings['outgoing'] | Http2Bindings['outgoing']): Response {
  if (!(outgoing instanceof ServerResponse)) return response
  const relay = relayOf(response)
  if (!relay) return response
  // The client left while the sidecar was answering: tear the upstream down, write nothing.
  if (outgoing.destroyed || relay.closed) {
    relay.cancel()
    outgoing.destroy()
    return alreadySent()
  }
  const message = takeNodeBody(relay.upstream)
  if (!message) return response
  const headers: Record<string, string | string[]> = {}
  response.headers.forEach((value, name) => (headers[name] = value))
  if (response.headers.has('set-cookie')) headers['set-cookie'] = response.headers.getSetCookie()
  outgoing.writeHead(response.status, headers)
  outgoing.flushHeaders()
  pipe(relay, message, outgoing)
  return alreadySent()
}

function pipe(relay: SseRelay, message: NodeBody, outgoing: ServerResponse): void {
  // Bytes this stream may still relay in this event-loop turn; past them it waits for the next
  // turn. A client socket takes a write at once, and libuv reads a socket up to 32 times in one
  // callback: 200 relayed streams then moved ~1 MB each per turn, and the API's own health waited
  // seconds behind them.
  let budget = RELAY_TURN_BYTES
  let refill: NodeJS.Immediate | undefined
  let yielded = false
  const nextTurn = () => {
    refill = undefined
    budget = RELAY_TURN_BYTES
    if (!yielded) return
    yielded = false
    if (outgoing.writableLength < RELAY_BUFFER_BYTES) message.resume()
  }
  relay.start(
    {
      write: (chunk, written) => {
        outgoing.write(chunk, written && (() => written()))
        budget -= chunk.length
        refill ??= setImmediate(nextTurn)
        // Both bounds hold: a drain within this turn does not restart a stream past its budget.
        if (budget <= 0) yielded = true
        if (yielded || outgoing.writableLength >= RELAY_BUFFER_BYTES) message.pause()
      },
      close: () => outgoing.end(),
    },
    () => message.destroy(),
  )
  outgoing.on('drain', () => yielded || message.resume())
  outgoing.once('close', () => clearImmediate(refill))
  outgoing.once('close', () => relay.cancel())
  if (message.destroyed) return relay.end()
  // A sidecar stream's pieces come with a release (node-slabs.ts): their room is reused once the
  // client's socket has taken them.
  message.on('data', (chunk: Buffer, release?: () => void) => relay.chunk(chunk, release))
  // The upstream ended, or broke off (the sidecar stopped): either way the client's stream ends.
  message.once('end', () => relay.end())
  message.once('close', () => relay.end())
  message.resume()
}

/**
 * @hono/node-server writes nothing for a response marked already sent, but only on its general
 * path: its lightweight Response (the global once a server runs) would take a cached path that
 * writes a head again. Reading `.body` turns the lightweight one into a real one.
 */
function alreadySent(): Response {
  void RESPONSE_ALREADY_SENT.body
  return RESPONSE_ALREADY_SENT
}
