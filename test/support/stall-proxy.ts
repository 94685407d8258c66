/**
 * An HTTP proxy in front of the API that can stall the sidecar for exactly one client request:
 * armed with `stallNext(match)`, it stops the sidecar (SIGSTOP) as the first matching request
 * passes and resumes it (SIGCONT) once the API answered that request (a 503: the sidecar did not
 * answer in time). So a client's own request, sent whenever the client sends it, meets a stalled
 * sidecar, which carries it out as it resumes, after the client was told 503. Every request is
 * recorded (method, path, Idempotency-Key, status) so a test can see the retries. Streams (SSE)
 * pass through as they arrive.
 */
import { createServer, request, type IncomingMessage, type Server } from 'node:http'
import { listenLoopback } from './ports.ts'

export interface Passed {
  method: string
  path: string
  key: string | undefined
  /** The API's status; undefined until it answered. */
  status?: number
}

export interface StallProxy {
  url: string
  passed: Passed[]
  /** The next request `match` accepts stalls the sidecar until the API answers it. */
  stallNext(match: (request: IncomingMessage) => boolean): void
  /** Resolves with the stalled request once the API answered it and the sidecar was resumed. */
  stalled(): Promise<Passed>
  close(): Promise<void>
}

/** The longest a stall may last if the API never answers (a broken test must not leave the sidecar stopped). */
const MAX_STALL_MS = 20_000

export async function startStallProxy(target: string, sidecarPid: () => number): Promise<StallProxy> {
  const { hostname, port } = new URL(target)
  let armed: ((request: IncomingMessage) => boolean) | undefined
  let stall: { done: Promise<Passed>; resolve: (passed: Passed) => void } | undefined
  let stopped = false
  const passed: Passed[] = []
  const resume = () => {
    if (!stopped) return
    stopped = false
    process.kill(sidecarPid(), 'SIGCONT')
  }
  const server: Server = createServer((incoming, outgoing) => {
    const record: Passed = { method: incoming.method!, path: incoming.url!, key: incoming.headers['idempotency-key'] as string | undefined }
    passed.push(record)
    let stalling: typeof stall | undefined
    if (armed?.(incoming)) {
      armed = undefined
      stalling = stall
      stopped = true
      process.kill(sidecarPid(), 'SIGSTOP')
      setTimeout(resume, MAX_STALL_MS).unref()
    }
    const upstream = request({ host: hostname, port, method: incoming.method, path: incoming.url, headers: incoming.headers }, (answer) => {
      record.status = answer.statusCode
      if (stalling) {
        resume()
        stalling.resolve(record)
      }
      outgoing.writeHead(answer.statusCode!, answer.headers)
      answer.pipe(outgoing)
      answer.once('error', () => outgoing.destroy())
    })
    upstream.once('error', () => outgoing.destroy())
    incoming.pipe(upstream)
    outgoing.once('close', () => upstream.destroy())
  })
  const url = await listenLoopback(server)
  return {
    url,
    passed,
    stallNext(match) {
      let resolve!: (passed: Passed) => void
      const done = new Promise<Passed>((r) => (resolve = r))
      stall = { done, resolve }
      armed = match
    },
    stalled: () => stall!.done,
    close: () =>
      new Promise<void>((resolve) => {
        resume()
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}
