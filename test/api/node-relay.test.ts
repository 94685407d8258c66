import { type ChildProcess, spawn } from 'node:child_process'
import { createHash } from 'node:crypto'
import {
  createServer,
  request as httpRequest,
  ServerResponse as NodeResponse,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http'
import type { AddressInfo } from 'node:net'
import { serve, type ServerType } from '@hono/node-server'
import { Hono } from 'hono'
import { afterEach, describe, expect, it } from 'vitest'
import { HEARTBEAT } from '../../common/sse.ts'
import { relaySSE } from '../../api/sse.ts'
import { RELAY_TURN_BYTES, withNodeRelays } from '../../api/runtime/node-relay.ts'
import { nodeFetch } from '../../api/runtime/node-transport.ts'

/** The upstream (the sidecar's part): a raw node:http server each test scripts. */
let upstream: Server | undefined
let front: ServerType | undefined
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))
/** How the sidecar client asks for every stream it relays (node-stream.ts opens it). */
const STREAM = { accept: 'text/event-stream' }

afterEach(async () => {
  for (const server of [upstream, front] as (Server | undefined)[]) {
    server?.closeAllConnections()
    await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined))
  }
  upstream = front = undefined
})

interface Front {
  url: string
  /** The responses relaySSE made; the Node carrier never reads their web bodies. */
  relayed: Response[]
}

async function start(
  script: (request: IncomingMessage, response: ServerResponse) => void,
  options: { heartbeatMs?: number; stillAuthorized?: () => Promise<boolean> } = {},
): Promise<Front> {
  upstream = createServer(script)
  await new Promise<void>((resolve) => upstream!.listen(0, '127.0.0.1', resolve))
  const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`
  const relayed: Response[] = []
  const app = new Hono()
  app.get('/plain', (c) => c.json({ plain: true }))
  app.get('/relay', async (c) => {
    const abort = new AbortController()
    const response = await nodeFetch(`${upstreamUrl}/`, { signal: abort.signal, headers: STREAM })
    const made = relaySSE(response, () => abort.abort(), {
      heartbeatMs: options.heartbeatMs ?? 10_000,
      requestSignal: c.req.raw.signal,
      stillAuthorized: options.stillAuthorized,
    })
    relayed.push(made)
    made.headers.set('x-relayed', 'yes')
    return made
  })
  const url = await new Promise<string>((resolve) => {
    front = serve({ fetch: withNodeRelays(app.fetch), hostname: '127.0.0.1', port: 0 }, (info) => resolve(`http://127.0.0.1:${info.port}`))
  })
  return { url, relayed }
}

/** A client over node:http that records each chunk it receives. */
function client(url: string) {
  const chunks: string[] = []
  let ended = false
  const response = new Promise<IncomingMessage>((resolve, reject) => {
    const outgoing = httpRequest(url, (message) => {
      message.setEncoding('utf8')
      message.on('data', (chunk: string) => chunks.push(chunk))
      message.on('end', () => (ended = true))
      resolve(message)
    })
    outgoing.on('error', reject)
    outgoing.end()
  })
  const text = () => chunks.join('')
  const until = async (predicate: () => boolean) => {
    for (let i = 0; i < 200 && !predicate(); i++) await sleep(10)
    expect(predicate()).toBe(true)
  }
  return { response, chunks, text, until, ended: () => ended }
}

/**
 * An upstream in a process of its own — `body` is the body of its request handler, with `r` the
 * response, and may use `prelude`'s names — relayed by a front in this process: the front's
 * /relay URL, and the source process to kill.
 */
async function relayFromProcess(prelude: string, body: string): Promise<{ url: string; source: ChildProcess }> {
  const source = spawn(process.execPath, [
    '-e',
    `${prelude}
    require('node:http').createServer((q, r) => {
      r.writeHead(200, { 'content-type': 'text/event-stream' })
      ${body}
    }).listen(0, '127.0.0.1', function () { console.log(this.address().port) })`,
  ])
  const port = await new Promise<number>((resolve) => source.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString()))))
  const app = new Hono()
  app.get('/relay', async (c) => {
    const abort = new AbortController()
    return relaySSE(await nodeFetch(`http://127.0.0.1:${port}/`, { signal: abort.signal, headers: STREAM }), () => abort.abort(), {
      requestSignal: c.req.raw.signal,
    })
  })
  const url = await new Promise<string>((resolve) => {
    front = serve({ fetch: withNodeRelays(app.fetch), hostname: '127.0.0.1', port: 0 }, (info) =>
      resolve(`http://127.0.0.1:${info.port}/relay`),
    )
  })
  return { url, source }
}

describe('withNodeRelays (relayed SSE on Node, without web streams)', () => {
  it('writes each upstream chunk as it arrives, with the app’s status and headers, and never reads the web body', async () => {
    let write!: (text: string) => void
    const { url, relayed } = await start((_, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      response.write('event: one\ndata: 1\n\n')
      write = (text) => response.write(text)
    })
    const c = client(`${url}/relay`)
    const message = await c.response
    expect(message.statusCode).toBe(200)
    expect(message.headers['content-type']).toMatch(/^text\/event-stream/)
    expect(message.headers['x-relayed']).toBe('yes')
    await c.until(() => c.text() === 'event: one\ndata: 1\n\n')
    write('event: two\ndata: 2\n\n')
    await c.until(() => c.text().endsWith('event: two\ndata: 2\n\n'))
    expect(relayed).toHaveLength(1)
    expect(relayed[0]!.body!.locked).toBe(false)

    // Anything else the app answers is untouched.
    expect(await (await fetch(`${url}/plain`)).json()).toEqual({ plain: true })
  })

  it('heartbeats only between events', async () => {
    let write!: (text: string) => void
    const { url } = await start(
      (_, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' })
        response.write('event: data\ndata: {"x":')
        write = (text) => response.write(text)
      },
      { heartbeatMs: 40 },
    )
    const c = client(`${url}/relay`)
    await c.until(() => c.text() === 'event: data\ndata: {"x":')
    // Mid-event: no heartbeat may be spliced in, however long the upstream pauses.
    await sleep(150)
    expect(c.text()).toBe('event: data\ndata: {"x":')
    write('1}\n\n')
    await c.until(() => c.text().startsWith(`event: data\ndata: {"x":1}\n\n${HEARTBEAT}`))
    expect(c.text()).toMatch(/^event: data\ndata: \{"x":1\}\n\n(: heartbeat\n\n)+$/)
  })

  it('ends the client’s stream when the upstream ends', async () => {
    const { url } = await start((_, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      response.write('data: last\n\n')
      response.end()
    })
    const ended = client(`${url}/relay`)
    await ended.until(() => ended.ended())
    expect(ended.text()).toBe('data: last\n\n')
  })

  it('ends cleanly when the upstream breaks off mid-stream', async () => {
    const { url } = await start((_, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      response.write('data: partial\n\n')
      setTimeout(() => response.socket?.destroy(), 50)
    })
    const broken = client(`${url}/relay`)
    await broken.until(() => broken.ended())
    expect(broken.text()).toBe('data: partial\n\n')
  })

  it('closes the upstream when the client goes away', async () => {
    let upstreamClosed = false
    const { url } = await start((_, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      response.write('data: hello\n\n')
      response.once('close', () => (upstreamClosed = true))
    })
    const c = client(`${url}/relay`)
    const message = await c.response
    await c.until(() => c.text() === 'data: hello\n\n')
    message.destroy()
    await c.until(() => upstreamClosed)
  })

  it('tears the upstream down when the client left before the sidecar answered', async () => {
    let upstreamClosed = false
    const { url } = await start((_, response) => {
      response.once('close', () => (upstreamClosed = true))
      setTimeout(() => {
        if (response.destroyed) return
        response.writeHead(200, { 'content-type': 'text/event-stream' })
        response.write('data: late\n\n')
      }, 300)
    })
    const outgoing = httpRequest(`${url}/relay`)
    outgoing.on('error', () => {})
    outgoing.end()
    await sleep(50)
    outgoing.destroy()
    for (let i = 0; i < 200 && !upstreamClosed; i++) await sleep(10)
    expect(upstreamClosed).toBe(true)
  })

  it('ends with auth/invalid-token at the first heartbeat after the token is revoked, and closes the upstream', async () => {
    let allowed = true
    let upstreamClosed = false
    const { url } = await start(
      (_, response) => {
        response.writeHead(200, { 'content-type': 'text/event-stream' })
        response.write('data: before\n\n')
        response.once('close', () => (upstreamClosed = true))
      },
      { heartbeatMs: 20, stillAuthorized: async () => allowed },
    )
    const c = client(`${url}/relay`)
    await c.until(() => c.text().startsWith('data: before\n\n'))
    allowed = false
    await c.until(() => c.ended())
    expect(
      c
        .text()
        .endsWith(
          'event: error\ndata: {"error":{"code":"auth/invalid-token","message":"the token was revoked or expired while the stream was open"}}\n\n',
        ),
    ).toBe(true)
    await c.until(() => upstreamClosed)
  })

  it('holds back a fast upstream while the client does not read, then delivers every byte', async () => {
    const total = 64 * 1024 * 1024
    const block = Buffer.alloc(1024 * 1024, 'x')
    let flushed = 0
    const { url } = await start((_, response) => {
      response.writeHead(200, { 'content-type': 'text/event-stream' })
      let sent = 0
      const more = () => {
        while (sent < total) {
          sent += block.length
          if (!response.write(block, () => (flushed += block.length))) return void response.once('drain', more)
        }
        response.end()
      }
      more()
    })
    const message = await new Promise<IncomingMessage>((resolve) => httpRequest(`${url}/relay`, resolve).end())
    message.pause()
    await sleep(500)
    // Only socket buffers (two loopback connections, up to ~10 MiB each with autotuning) and the
    // relay's own bound were taken; not 64 MiB.
    expect(flushed).toBeLessThan(total / 2)
    let received = 0
    message.on('data', (chunk: Buffer) => (received += chunk.length))
    message.resume()
    await new Promise((resolve) => message.once('end', resolve))
    expect(received).toBe(total)
  })

  it('delivers every byte unchanged to a client that reads in fits, while its slabs are reused (node-slabs.ts)', async () => {
    // Varied bytes (no 1 MiB block is the one before it), far more than the slabs the relay keeps,
    // from a process of its own (so the relay's socket reads come several per callback, as from a
    // sidecar): a piece whose room were reused before the client's socket took it would show. (The
    // relay pauses its upstream after any read the client's socket does not take at once, so even
    // a relay that copied nothing passes here; the slabs' own bookkeeping is node-slabs.test.ts.)
    const blocks = 48
    const block = (i: number) => {
      const bytes = Buffer.allocUnsafe(1024 * 1024)
      for (let at = 0; at < bytes.length; at += 4) bytes.writeUInt32LE((Math.imul(at, 2654435761) + i * 40503) >>> 0, at)
      return bytes
    }
    const expected = createHash('sha256')
    for (let i = 0; i < blocks; i++) expected.update(block(i))
    const { url, source } = await relayFromProcess(
      `const block = ${block.toString()}`,
      `let i = 0
      const more = () => { while (i < ${blocks}) { if (!r.write(block(i++))) return void r.once('drain', more) } r.end() }
      more()`,
    )
    try {
      const message = await new Promise<IncomingMessage>((resolve) => httpRequest(url, resolve).end())
      const received = createHash('sha256')
      let bytes = 0
      message.on('data', (chunk: Buffer) => {
        received.update(chunk)
        bytes += chunk.length
        // Stops now and then, long enough for both sockets' buffers to fill, so the relay's writes
        // wait in Node while it reads on until its bound holds it back.
        if (bytes % (12 * 1024 * 1024) < chunk.length) {
          message.pause()
          setTimeout(() => message.resume(), 250)
        }
      })
      await new Promise((resolve) => message.once('end', resolve))
      expect(bytes).toBe(blocks * 1024 * 1024)
      expect(received.digest('hex')).toBe(expected.digest('hex'))
    } finally {
      source.kill()
    }
  })

  it('relays at most RELAY_TURN_BYTES of one stream per event-loop turn, however fast both ends are', async () => {
    // Both ends in processes of their own, as fast as they go: the relay's process does nothing
    // else, so its socket reads run as far as libuv lets them (up to 32 reads per callback).
    const total = 32 * 1024 * 1024
    const { url, source } = await relayFromProcess(
      `const block = Buffer.alloc(1024 * 1024, 'x')`,
      `let sent = 0
      const more = () => { while (sent < ${total}) { sent += block.length; if (!r.write(block)) return void r.once('drain', more) } r.end() }
      more()`,
    )
    // Bytes written to responses in each turn (a turn ends where an immediate runs).
    let turnBytes = 0
    let most = 0
    let turning = true
    const tick = () => {
      most = Math.max(most, turnBytes)
      turnBytes = 0
      if (turning) setImmediate(tick)
    }
    setImmediate(tick)
    const write = NodeResponse.prototype.write
    NodeResponse.prototype.write = function (this: NodeResponse, chunk: unknown, ...rest: unknown[]) {
      turnBytes += (chunk as Uint8Array).length ?? 0
      return (write as (...args: unknown[]) => boolean).call(this, chunk, ...rest)
    } as typeof write
    try {
      const sink = spawn(process.execPath, [
        '-e',
        `
        require('node:http').get(${JSON.stringify(url)}, (r) => { let n = 0; r.on('data', (c) => (n += c.length)); r.on('end', () => console.log(n)) })`,
      ])
      const received = await new Promise<number>((resolve) => sink.stdout!.once('data', (d: Buffer) => resolve(Number(d.toString()))))
      expect(received).toBe(total)
    } finally {
      NodeResponse.prototype.write = write
      turning = false
      source.kill()
    }
    expect(most).toBeGreaterThan(0)
    expect(most).toBeLessThanOrEqual(RELAY_TURN_BYTES + 64 * 1024)
  })
})
