/**
 * What Node refuses before the app sees a request is answered in the error shape: the real Node
 * entry (startNodeApi) over raw sockets, since no HTTP client sends these requests.
 */
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { openStorage, type Storage } from '../../storage/client.ts'
import { startNodeApi, type RunningApi } from './node.ts'
import { answerClientError, clientErrorOf, createNodeServer } from './node-server.ts'

let dir: string
let storage: Storage
let api: RunningApi

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'termkeep-node-server-'))
  storage = await openStorage({ url: `file:${join(dir, 'termkeep.db')}` })
  // None of these requests reaches the sidecar.
  api = await startNodeApi({
    storage,
    sidecarUrl: 'http://127.0.0.1:9',
    sidecarSecret: 'not-used-by-these-requests',
    host: '127.0.0.1',
    port: 0,
  })
})
afterAll(async () => {
  await api?.close()
  storage?.close()
  rmSync(dir, { recursive: true, force: true })
})

interface Answer {
  status: number
  headers: Record<string, string>
  body: any
  /** The server closed the connection by itself. */
  closed: boolean
}

/** Sends raw bytes in one write and reads the answer; `closed` unless the connection stays open
 * for a while after the whole answer (its Content-Length) arrived. */
function raw(request: string): Promise<Answer> {
  return new Promise((resolve) => {
    const socket = connect(api.port, '127.0.0.1')
    let text = ''
    let timer: ReturnType<typeof setTimeout> | undefined
    const done = (closed: boolean) => {
      clearTimeout(timer)
      socket.destroy()
      const split = text.indexOf('\r\n\r\n')
      const [statusLine, ...lines] = text.slice(0, split).split('\r\n')
      const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
      const body = text.slice(split + 4)
      resolve({ status: Number(statusLine!.split(' ')[1]), headers, body: body ? JSON.parse(body) : undefined, closed })
    }
    socket.on('data', (chunk) => {
      text += chunk
      const length = /\r\ncontent-length: (\d+)\r\n/i.exec(text)?.[1]
      const split = text.indexOf('\r\n\r\n')
      if (length !== undefined && split !== -1 && Buffer.byteLength(text.slice(split + 4)) >= Number(length))
        timer ??= setTimeout(() => done(false), 300)
    })
    socket.on('error', () => {})
    socket.once('close', () => done(true))
    socket.write(request)
  })
}

describe('the Node server', () => {
  it.each([
    ['a URL over 16 KiB', `GET /v1/health?${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 431, 'request/headers-too-large'],
    ['headers over 16 KiB', `GET /v1/health HTTP/1.1\r\nHost: x\r\nX-Big: ${'b'.repeat(20_000)}\r\n\r\n`, 431, 'request/headers-too-large'],
    ['a NUL in a header', 'GET /v1/health HTTP/1.1\r\nHost: x\r\nX-A: a\0b\r\n\r\n', 400, 'request/invalid'],
    ['a bad Content-Length', 'POST /v1/tickets HTTP/1.1\r\nHost: x\r\nContent-Length: 1x\r\n\r\n', 400, 'request/invalid'],
    ['a bad chunk size', 'POST /v1/tickets HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n', 400, 'request/invalid'],
    ['not HTTP at all', '\x01\x02 HELLO\r\n\r\n', 400, 'request/invalid'],
    ['no Host on HTTP/1.1', 'GET /v1/health HTTP/1.1\r\n\r\n', 400, 'request/invalid'],
  ])('answers %s in the error shape and closes the connection', async (_, request, status, code) => {
    const answer = await raw(request)
    expect([answer.status, answer.headers['content-type'], answer.body?.error?.code]).toEqual([status, 'application/json', code])
    expect(answer.body.error.message).toEqual(expect.any(String))
    expect(answer.headers.connection).toBe('close')
    expect(answer.closed).toBe(true)
  })

  it.each([
    ['a Host that makes no URL', 'GET /v1/health HTTP/1.1\r\nHost: a b/c\r\n\r\n', 400, 'request/invalid'],
    [
      'an Expect other than 100-continue',
      'GET /v1/health HTTP/1.1\r\nHost: x\r\nExpect: 200-ok\r\n\r\n',
      417,
      'request/expectation-failed',
    ],
  ])('answers %s in the error shape (the request was whole: the connection stays usable)', async (_, request, status, code) => {
    const answer = await raw(request)
    expect([answer.status, answer.headers['content-type'], answer.body?.error?.code]).toEqual([status, 'application/json', code])
    expect(answer.closed).toBe(false)
  })

  it('destroys the socket of a peer that reset, and writes nothing', async () => {
    const server = createNodeServer(() => new Response('ok'), '127.0.0.1')
    const seen = new Promise<{ code?: string; destroyed: boolean }>((resolve) =>
      // Listeners run in order: this one sees the socket after answerClientError handled it.
      server.on('clientError', (error: Error & { code?: string }, socket) => resolve({ code: error.code, destroyed: socket.destroyed })),
    )
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    try {
      const socket = connect((server.address() as { port: number }).port, '127.0.0.1')
      await new Promise((resolve) => socket.on('connect', resolve))
      socket.write('GET /v1/health HTTP/1.1\r\nHo')
      await new Promise((resolve) => setTimeout(resolve, 50))
      socket.resetAndDestroy()
      expect(await seen).toEqual({ code: 'ECONNRESET', destroyed: true })
    } finally {
      server.closeAllConnections()
      await new Promise((resolve) => server.close(resolve))
    }
  })
})

describe('answerClientError', () => {
  const parseError = Object.assign(new Error('Parse Error'), { code: 'HPE_INVALID_METHOD', reason: 'Invalid method encountered' })

  it('destroys a socket that is not writable, or whose response has begun, writing nothing', () => {
    const ended = new PassThrough()
    ended.end()
    const begun = Object.assign(new PassThrough(), { _httpMessage: { headersSent: true } })
    for (const socket of [ended, begun]) {
      const written: unknown[] = []
      socket.on('data', (chunk) => written.push(chunk))
      answerClientError(parseError, socket)
      expect([socket.destroyed, written]).toEqual([true, []])
    }
  })

  it('maps the parser codes to the error vocabulary', () => {
    const of = (code: string) => clientErrorOf(Object.assign(new Error(code), { code }))
    expect([
      of('HPE_HEADER_OVERFLOW').status,
      of('HPE_CHUNK_EXTENSIONS_OVERFLOW').status,
      of('ERR_HTTP_REQUEST_TIMEOUT').status,
      of('HPE_INVALID_CONSTANT').status,
    ]).toEqual([431, 413, 408, 400])
  })
})
