/**
 * Server-sent events on the wire, one framing for the API and the sidecar (the web client parses
 * them with eventsource-parser). Pure: events in, text out; how a stream is pulled and relayed is
 * each process's own (api/sse.ts, sidecar/http/sse.ts).
 */

/**
 * One event, or a comment (a heartbeat). `id` is the resume cursor a client sends back as
 * Last-Event-ID (a sequence, or an opaque cursor). `data` goes out as is when it is a string or
 * RawJson, else as JSON.
 */
export type SseEvent = { event?: string; id?: string | number; data: unknown } | { comment: string }

/** Event data that is already JSON text (e.g. built around a base64 payload, which needs no
 * escaping: JSON.stringify would only spend time scanning it). One line, like all JSON text. */
export class RawJson {
  constructor(readonly json: string) {}
}

export const HEARTBEAT = ': heartbeat\n\n'

export const SSE_HEADERS: Readonly<Record<string, string>> = {
  'content-type': 'text/event-stream; charset=utf-8',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
}

const LINE_BREAK = /[\r\n]/

/** The wire form of one event: string data of several lines becomes several `data:` lines; JSON
 * is one line already. Event names and ids are single-line (a bug otherwise: it throws). */
export function sseFrame(event: SseEvent): string {
  if ('comment' in event) return `: ${event.comment}\n\n`
  const { event: name, id, data } = event
  if ((name !== undefined && LINE_BREAK.test(name)) || (typeof id === 'string' && LINE_BREAK.test(id))) {
    throw new Error('SSE event names and ids are single-line')
  }
  let frame = name ? `event: ${name}\n` : ''
  if (id !== undefined) frame += `id: ${id}\n`
  if (typeof data !== 'string') return `${frame}data: ${data instanceof RawJson ? data.json : JSON.stringify(data)}\n\n`
  for (const line of data.split(/\r\n|\r|\n/)) frame += `data: ${line}\n`
  return `${frame}\n`
}
