import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import { createServer as createNetServer, type AddressInfo, type Socket } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { nodeFetch, takeNodeBody } from './node-transport.ts'

type Handler = (request: IncomingMessage, response: ServerResponse) => void

let server: Server | undefined

async function serve(handler: Handler): Promise<string> {
  server = createServer(handler)
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

afterEach(async () => {
  server?.closeAllConnections()
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined))
  server = undefined
})

function bodyOf(request: IncomingMessage): Promise<Buffer> {
  return new Promise((resolve) => {
    const parts: Buffer[] = []
    request.on('data', (chunk: Buffer) => parts.push(chunk)).on('end', () => resolve(Buffer.concat(parts)))
  })
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

describe('nodeFetch (the Node API’s sidecar transport)', () => {
  it('sends method, headers and byte or string bodies exactly; answers status, headers and body', async () => {
    const seen: { method?: string; auth?: string; body: Buffer }[] = []
    const url = await serve(async (request, response) => {
      seen.push({ method: request.method, auth: request.headers.authorization, body: await bodyOf(request) })
      response.writeHead(201, 'Made', [
        ['content-type', 'application/json'],
        ['set-cookie', 'a=1'],
        ['set-cookie', 'b=2'],
      ])
      response.end(JSON.stringify({ ok: true }))
    })
    const bytes = Uint8Array.from([0, 1, 2, 255, 27, 13])
    const answer = await nodeFetch(`${url}/x`, { method: 'POST', headers: new Headers({ authorization: 'Bearer s' }), body: bytes })
    expect([answer.status, answer.statusText, answer.ok]).toEqual([201, 'Made', true])
    expect(answer.headers.get('content-type')).toBe('application/json')
    expect(answer.headers.getSetCookie()).toEqual(['a=1', 'b=2'])
    expect(await answer.json()).toEqual({ ok: true })
    await (await nodeFetch(`${url}/y`, { method: 'PUT', body: 'héllo' })).text()
    expect(seen).toEqual([
      { method: 'POST', auth: 'Bearer s', body: Buffer.from(bytes) },
      { method: 'PUT', auth: undefined, body: Buffer.from('héllo') },
    ])
  })

  it('gives a 204 no body, and refuses a body kind it does not send', async () => {
    const url = await serve((_, response) => {
      response.statusCode = 204
      response.end()
    })
    const answer = await nodeFetch(url, { method: 'DELETE' })
    expect([answer.status, answer.body]).toEqual([204, null])
    await expect(nodeFetch(url, { method: 'POST', body: new Blob(['x']) })).rejects.toThrow(TypeError)
  })

  it('sends a request again on a new connection when the kept-alive one was reset under it', async () => {
    // A server that answers the first request of each connection and resets the connection on the
    // next one, unread: what an idle kept-alive connection closed by the server looks like.
    const connections: Socket[] = []
    const raw = createNetServer((socket) => {
      connections.push(socket)
      let requests = 0
      socket.on('data', (chunk) => {
        if (!chunk.includes('\r\n\r\n')) return
        if (++requests === 1) return void socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: keep-alive\r\n\r\nok')
        socket.resetAndDestroy()
      })
    })
    await new Promise<void>((resolve) => raw.listen(0, '127.0.0.1', resolve))
    try {
      const url = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`
      expect(await (await nodeFetch(`${url}/a`)).text()).toBe('ok')
      expect(await (await nodeFetch(`${url}/b`, { method: 'POST', body: 'x' })).text()).toBe('ok')
      expect(connections).toHaveLength(2)
    } finally {
      for (const socket of connections) socket.destroy()
      raw.close()
    }
  })

  it('opens an event stream on a connection of its own in HTTP/1.0: headers sent as given; status, headers and an error’s body answered', async () => {
    const seen: { version: string; auth?: string; resume?: string }[] = []
    const url = await serve((request, response) => {
      seen.push({ version: request.httpVersion, auth: request.headers.authorization, resume: String(request.headers['last-event-id']) })
      if (request.url === '/gone')
        return void response.writeHead(410, { 'content-type': 'application/json' }).end('{"error":{"code":"terminal/unavailable"}}')
      response.writeHead(200, { 'content-type': 'text/event-stream', 'x-seen': 'yes' })
      response.end('event: closed\ndata: {}\n\n')
    })
    const headers = { accept: 'text/event-stream', authorization: 'Bearer s', 'last-event-id': '42' }
    const answer = await nodeFetch(`${url}/watch?after=1`, { headers })
    expect(answer.status).toBe(200)
    expect(answer.headers.get('x-seen')).toBe('yes')
    expect(await answer.text()).toBe('event: closed\ndata: {}\n\n')
    const gone = await nodeFetch(`${url}/gone`, { headers })
    expect(gone.status).toBe(410)
    expect(await gone.json()).toEqual({ error: { code: 'terminal/unavailable' } })
    expect(seen).toEqual([
      { version: '1.0', auth: 'Bearer s', resume: '42' },
      { version: '1.0', auth: 'Bearer s', resume: '42' },
    ])
  })

  it('rejects at once when nothing listens', async () => {
    const url = await serve(() => {})
    server!.close()
    await new Promise((resolve) => server!.once('close', resolve))
    server = undefined
    await expect(nodeFetch(url)).rejects.toMatchObject({ code: 'ECONNREFUSED' })
  })

  it('aborts a request that is never answered, with the signal’s reason, and closes the connection', async () => {
    let closed = false
    const url = await serve((request) => request.socket.once('close', () => (closed = true)))
    const reason = new Error('timed out')
    const controller = new AbortController()
    setTimeout(() => controller.abort(reason), 100)
    await expect(nodeFetch(url, { signal: controller.signal })).rejects.toBe(reason)
    await sleep(100)
    expect(closed).toBe(true)
  })
})

/** Every body behaves alike whether node:http carries it or a stream's own connection does. */
describe.each([
  { transport: 'node:http', headers: {} as Record<string, string>, delimited: true, chunked: false },
  // Its body ends where the connection closes, so a break-off reads as the end: what a relay does
  // with either (sse.ts), and an event stream has no length to fall short of.
  {
    transport: 'an event stream’s own HTTP/1.0 connection (node-stream.ts)',
    headers: { accept: 'text/event-stream' } as Record<string, string>,
    delimited: false,
    chunked: false,
  },
  // …unless its route names the chunked coding itself (Hono's streamSSE does): decoded, and ended by its last chunk.
  {
    transport: 'an event stream’s own connection, chunked by its route',
    headers: { accept: 'text/event-stream' } as Record<string, string>,
    delimited: true,
    chunked: true,
  },
])('nodeFetch bodies over $transport', ({ headers, delimited, chunked }) => {
  const serveAs = (handler: Handler) =>
    serve((request, response) => {
      if (chunked) response.setHeader('transfer-encoding', 'chunked')
      handler(request, response)
    })
  it('streams the body as it arrives; cancelling it closes the upstream response', async () => {
    let release!: () => void
    let upstreamClosed = false
    const url = await serveAs((_, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      response.write('event: one\n\n')
      response.once('close', () => (upstreamClosed = true))
      release = () => response.write('event: two\n\n')
    })
    const answer = await nodeFetch(url, { headers })
    const reader = answer.body!.getReader()
    const decoder = new TextDecoder()
    expect(decoder.decode((await reader.read()).value)).toBe('event: one\n\n')
    release()
    expect(decoder.decode((await reader.read()).value)).toBe('event: two\n\n')
    await reader.cancel()
    await sleep(100)
    expect(upstreamClosed).toBe(true)
  })

  it('errors the body (not a clean end) when the signal aborts mid-body, or (delimited) the upstream breaks off', async () => {
    const url = await serveAs((request, response) => {
      response.writeHead(200)
      response.write('partial')
      if (request.url === '/break') setTimeout(() => response.socket?.destroy(), 50)
    })
    const broken = (await nodeFetch(`${url}/break`, { headers })).body!.getReader()
    expect((await broken.read()).value?.length).toBe(7)
    if (delimited) await expect(broken.read()).rejects.toThrow()
    else expect(await broken.read()).toEqual({ done: true, value: undefined })

    const controller = new AbortController()
    const reason = new Error('client went away')
    const aborted = (await nodeFetch(`${url}/hold`, { signal: controller.signal, headers })).body!.getReader()
    expect((await aborted.read()).value?.length).toBe(7)
    controller.abort(reason)
    await expect(aborted.read()).rejects.toBe(reason)
  })

  it('holds back a fast upstream while the reader does not read, then delivers every byte', async () => {
    const total = 64 * 1024 * 1024
    const block = Buffer.alloc(1024 * 1024, 'x')
    let flushed = 0
    const url = await serveAs((_, response) => {
      response.writeHead(200)
      let sent = 0
      const more = () => {
        while (sent < total) {
          sent += block.length
          const ok = response.write(block, () => (flushed += block.length))
          if (!ok) return void response.once('drain', more)
        }
        response.end()
      }
      more()
    })
    const reader = (await nodeFetch(url, { headers })).body!.getReader()
    await sleep(500)
    // Only the kernel's socket buffers and the stream's high-water mark were taken; not 64 MiB.
    expect(flushed).toBeLessThan(total / 4)
    let received = 0
    for (;;) {
      const { done, value } = await reader.read()
      if (done) break
      received += value.length
    }
    expect(received).toBe(total)
  })

  it('hands an unread body’s socket stream over once; a body already read, or taken, is not handed twice', async () => {
    const url = await serveAs((_, response) => {
      response.writeHead(200)
      response.end('whole body')
    })
    const taken = await nodeFetch(url, { headers })
    const message = takeNodeBody(taken)!
    expect(message).toBeDefined()
    expect(takeNodeBody(taken)).toBeUndefined()
    const parts: Buffer[] = []
    message.on('data', (chunk: Buffer) => parts.push(chunk))
    const ended = new Promise((resolve) => message.once('end', resolve))
    message.resume()
    await ended
    expect(Buffer.concat(parts).toString()).toBe('whole body')
    // The web body of a taken response refuses to read instead of hanging.
    await expect(taken.text()).rejects.toThrow(TypeError)

    const read = await nodeFetch(url, { headers })
    const reader = read.body!.getReader()
    expect(new TextDecoder().decode((await reader.read()).value)).toBe('whole body')
    expect(takeNodeBody(read)).toBeUndefined()
  })
})
