/**
 * Server-sent events, pulled (pulled.ts). A stream is an async generator of events; the HTTP body
 * asks it for the next event only when the client has taken the previous one (the socket drained),
 * so a slow or stalled client holds at most one event here, never a growing queue.
 */
import { type ChunkSource, pulledResponse } from './pulled.ts'

/** `id`: the resume cursor a client sends back as Last-Event-ID (a sequence, or an opaque cursor). */
export type SseEvent = { event: string; data: unknown; id?: number | string } | { comment: string }
/** Events already in SSE framing (UTF-8), written as they are: a hot path (output items) builds
 * its frames straight into one buffer instead of event objects, template strings, a join and a
 * TextEncoder pass, which cost three extra copies of every payload byte. */
export class SseFrames {
  constructor(readonly bytes: Uint8Array) {}
}
/** A source yields single events, a batch of events that go out as one write, or ready frames. */
export type SseYield = SseEvent | readonly SseEvent[] | SseFrames

/** Event data that is already JSON text (e.g. built around a base64 payload, which needs no
 * escaping: JSON.stringify would only spend time scanning it). */
export class RawJson {
  constructor(readonly json: string) {}
}

/** One event in SSE framing. Data is one line of JSON, so it needs no splitting. */
export function formatSse(event: SseEvent): string {
  if ('comment' in event) return `: ${event.comment}\n\n`
  const id = event.id === undefined ? '' : `id: ${event.id}\n`
  const data = event.data instanceof RawJson ? event.data.json : JSON.stringify(event.data)
  return `event: ${event.event}\n${id}data: ${data}\n\n`
}

export type SseSource = ChunkSource<SseYield>

function encode(value: SseEvent | readonly SseEvent[]): string {
  return Array.isArray(value) ? value.map(formatSse).join('') : formatSse(value as SseEvent)
}

const SSE_HEADERS = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
}

/** An SSE response pulled from `source` (see pulledResponse: the first event is awaited before
 * answering, so a failure at the start fails the call with its proper status). */
export function sseResponse(source: SseSource, requestSignal?: AbortSignal): Promise<Response> {
  const encoder = new TextEncoder()
  const toBytes = (value: SseYield) => (value instanceof SseFrames ? value.bytes : encoder.encode(encode(value)))
  return pulledResponse(source, toBytes, SSE_HEADERS, requestSignal)
}
