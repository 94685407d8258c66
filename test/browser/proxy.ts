/**
 * A loopback TCP proxy in front of the API, so a test can cut the network under a browser: `cut()`
 * destroys every open connection and refuses new ones until `restore()`.
 */
import { createServer, connect, type Socket } from 'node:net'
import { listenLoopback } from '../support/ports.ts'

export interface Proxy {
  url: string
  cut(): void
  restore(): void
  close(): Promise<void>
}

export async function startProxy(target: string): Promise<Proxy> {
  const { hostname, port } = new URL(target)
  const sockets = new Set<Socket>()
  let down = false
  const track = (socket: Socket) => {
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
  }
  const server = createServer((client) => {
    if (down) return void client.destroy()
    const upstream = connect(Number(port), hostname)
    track(client)
    track(upstream)
    client.pipe(upstream)
    upstream.pipe(client)
    client.once('error', () => upstream.destroy())
    upstream.once('error', () => client.destroy())
    client.once('close', () => upstream.destroy())
    upstream.once('close', () => client.destroy())
  })
  const url = await listenLoopback(server)
  return {
    url,
    cut() {
      down = true
      for (const socket of sockets) socket.destroy()
    },
    restore() {
      down = false
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy()
        server.close(() => resolve())
      }),
  }
}
