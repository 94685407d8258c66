/**
 * Server-sent events, pulled (pulled.ts). A stream is an async generator of events; the HTTP body
 * asks it for the next event only when the client has taken the previous one (the socket drained),
 * so a slow or stalled client holds at most one event here, never a growing queue.
 */
import { SSE_HEADERS, sseFrame, type SseEvent } from '../../common/sse.ts'
import { type ChunkSource, pulledResponse } from './pulled.ts'

/** Events already in SSE framing (UTF-8), written as they are: a hot path (output items) builds
 * its frames straight into one buffer instead of event objects, template strings, a join and a
 * TextEncoder pass, which cost three extra copies of every payload byte. */
export class SseFrames {
  constructor(readonly bytes: Uint8Array) {}
}
/** A source yields single events, a batch of events that go out as one write, or ready frames. */
export type SseYield = SseEvent | readonly SseEvent[] | SseFrames

export type SseSource = ChunkSource<SseYield>

function encode(value: SseEvent | readonly SseEvent[]): string {
  return Array.isArray(value) ? value.map(sseFrame).join('') : sseFrame(value as SseEvent)
}

/** An SSE response pulled from `source` (see pulledResponse: the first event is awaited before
 * answering, so a failure at the start fails the call with its proper status). */
export function sseResponse(source: SseSource, requestSignal?: AbortSignal): Promise<Response> {
  const encoder = new TextEncoder()
  const toBytes = (value: SseYield) => (value instanceof SseFrames ? value.bytes : encoder.encode(encode(value)))
  return pulledResponse(source, toBytes, SSE_HEADERS, requestSignal)
}
