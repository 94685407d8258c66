/**
 * The keeper's socket: connections, the handshake (local/keeper/proof.ts), and each request
 * turned into a call on the terminals. One connection at a time may be the sidecar's; it gets
 * every terminal's output and events once it asked for the list (the list is the backlog, the
 * notifications after it the live edge: nothing falls between). Other connections (the CLI) only
 * ask. The keeper never waits for a connection: output goes with its bytes while the sidecar
 * keeps up, as entries alone when it lags, and a sidecar that stopped reading is dropped.
 */
import { lstatSync, rmSync } from 'node:fs'
import { createServer, type Server, type Socket } from 'node:net'
import type { Appended } from '../local/journal/writer.ts'
import { FrameError, FrameReader, jsonFrame, parseInput, parseJson, parseKeyedInput, recordsHead } from '../local/keeper/frames.ts'
import type { KeeperPaths } from '../local/keeper/paths.ts'
import { newNonce, proofHolds, proofOf } from '../local/keeper/proof.ts'
import {
  type ClientMessage,
  FRAME_INPUT,
  FRAME_JSON,
  FRAME_KEYED_INPUT,
  KEEPER_PROTOCOL,
  type KeeperInfo,
  type KeeperMessage,
  type Role,
} from '../local/keeper/protocol.ts'
import { log } from './log.ts'
import { killLeftovers } from './orphans.ts'
import type { KeptTerminals, Subscriber } from './terminals.ts'
import { hopMark } from '../common/hop-trace.ts'
import {
  KEEPER_CLIENT_BACKLOG_MAX_BYTES,
  KEEPER_HANDSHAKE_MS,
  KEEPER_INLINE_FLUSH_BYTES,
  KEEPER_INLINE_MAX_BYTES,
  KEEPER_SOCKET_CHECK_MS,
} from './tuning.ts'

type Phase = 'hello' | 'auth' | 'ready'

class Connection implements Subscriber {
  phase: Phase = 'hello'
  role: Role = 'control'
  peer = ''
  readonly nonce = newNonce()
  theirNonce = ''
  protocol = KEEPER_PROTOCOL
  readonly reader = new FrameReader()

  constructor(readonly socket: Socket) {}

  send(message: KeeperMessage): void {
    if (!this.socket.destroyed) this.socket.write(jsonFrame(message))
  }

  records(terminal: number, appended: Appended, bytes?: Uint8Array): void {
    const socket = this.socket
    if (socket.destroyed) return
    const inline = bytes !== undefined && bytes.length <= KEEPER_INLINE_FLUSH_BYTES && socket.writableLength < KEEPER_INLINE_MAX_BYTES
    hopMark('keeper: output journaled → sidecar')
    socket.cork()
    socket.write(recordsHead(terminal, appended.first, appended.count, appended.entries, inline ? bytes.length : 0))
    if (inline) socket.write(bytes)
    socket.uncork()
    if (socket.writableLength > KEEPER_CLIENT_BACKLOG_MAX_BYTES) {
      log(`the sidecar (${this.peer}) left ${socket.writableLength} bytes unread: dropping its connection (its terminals keep running)`)
      socket.destroy()
    }
  }

  notify(message: KeeperMessage): void {
    this.send(message)
  }
}

export class KeeperServer {
  readonly #paths: KeeperPaths
  readonly #secret: Buffer
  readonly #info: KeeperInfo
  readonly #terminals: KeptTerminals
  readonly #connections = new Set<Connection>()
  #server: Server | undefined
  #bound: { dev: number; ino: number } | undefined
  #sidecar: Connection | undefined
  #watch: NodeJS.Timeout | undefined
  /** When the keeper last had a sidecar connected (idle exit). */
  lastSidecarAt = Date.now()

  constructor(paths: KeeperPaths, secret: Buffer, info: KeeperInfo, terminals: KeptTerminals) {
    this.#paths = paths
    this.#secret = secret
    this.#info = info
    this.#terminals = terminals
  }

  get hasSidecar(): boolean {
    return this.#sidecar !== undefined
  }

  /** Listens at the socket path (0600) and starts watching that the path stays ours. */
  async listen(): Promise<void> {
    await this.#bind()
    this.#watch = setInterval(() => void this.#checkSocket(), KEEPER_SOCKET_CHECK_MS)
    this.#watch.unref()
  }

  /** Stops listening and removes the socket (connections stay until they end). */
  close(): void {
    clearInterval(this.#watch)
    this.#server?.close()
    if (this.#bound && this.#socketIsOurs()) rmSync(this.#paths.socket, { force: true })
  }

  /** Tells every connection the keeper is stopping (its terminals end next). */
  announceStop(): void {
    for (const connection of this.#connections) if (connection.phase === 'ready') connection.send({ type: 'stopping' })
  }

  /** Ends every connection once what was sent on it is flushed (the keeper exits next), or after
   * `waitMs`. */
  async disconnectAll(waitMs: number): Promise<void> {
    const closing = [...this.#connections].map((connection) => new Promise<void>((resolve) => connection.socket.end(() => resolve())))
    let timer: NodeJS.Timeout | undefined
    await Promise.race([Promise.all(closing), new Promise((resolve) => (timer = setTimeout(resolve, waitMs)))])
    clearTimeout(timer)
  }

  async #bind(): Promise<void> {
    rmSync(this.#paths.socket, { force: true }) // a dead keeper's (we hold the lock)
    const server = createServer((socket) => this.#accept(socket))
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject)
      // The umask makes the socket 0600 from its first moment: a chmod after bind leaves a window.
      const umask = process.umask(0o177)
      try {
        server.listen(this.#paths.socket, () => {
          server.off('error', reject)
          resolve()
        })
      } finally {
        process.umask(umask)
      }
    })
    server.on('error', (error) => log('the socket failed', error))
    const stat = lstatSync(this.#paths.socket)
    this.#bound = { dev: stat.dev, ino: stat.ino }
    this.#server = server
  }

  #socketIsOurs(): boolean {
    try {
      const stat = lstatSync(this.#paths.socket)
      return stat.dev === this.#bound?.dev && stat.ino === this.#bound.ino
    } catch {
      return false
    }
  }

  /** The socket file removed or replaced (by hand, a cleanup job, an impostor): said, and the path
   * taken back. Connections already open are not affected. */
  async #checkSocket(): Promise<void> {
    if (this.#socketIsOurs()) return
    let what = 'removed'
    try {
      lstatSync(this.#paths.socket)
      what = 'replaced by another file'
    } catch {
      // removed
    }
    log(`the keeper's socket ${this.#paths.socket} was ${what}; listening there again`)
    this.#server?.close()
    try {
      await this.#bind()
    } catch (error) {
      log('listening again failed; trying at the next check', error)
    }
  }

  #accept(socket: Socket): void {
    const connection = new Connection(socket)
    this.#connections.add(connection)
    const timer = setTimeout(() => {
      if (connection.phase !== 'ready') socket.destroy()
    }, KEEPER_HANDSHAKE_MS)
    socket.on('data', (chunk: Buffer) => {
      try {
        connection.reader.push(chunk, (frame) => {
          if ((frame.kind === FRAME_INPUT || frame.kind === FRAME_KEYED_INPUT) && connection.phase === 'ready') {
            const { id, bytes, key } = frame.kind === FRAME_INPUT ? parseInput(frame.payload) : parseKeyedInput(frame.payload)
            // A copy of its own: a view would carry the whole read buffer to the PTY thread. Input
            // for a terminal released meanwhile is moot.
            if (this.#terminals.has(id)) this.#terminals.write(id, new Uint8Array(bytes), key)
            return
          }
          if (frame.kind !== FRAME_JSON) throw new FrameError(`frame kind ${frame.kind} in phase ${connection.phase}`)
          this.#receive(connection, parseJson(frame.payload) as ClientMessage)
        })
      } catch (error) {
        log(`dropping a connection (${connection.peer || 'unauthenticated'})`, error)
        socket.destroy()
      }
    })
    socket.on('error', () => {}) // 'close' follows
    socket.once('close', () => {
      clearTimeout(timer)
      this.#connections.delete(connection)
      if (this.#sidecar === connection) {
        this.#sidecar = undefined
        this.#terminals.subscribe(undefined)
        this.lastSidecarAt = Date.now()
        log(`the sidecar (${connection.peer}) disconnected; ${this.#terminals.size} terminal(s) keep running`)
      }
    })
  }

  #receive(connection: Connection, message: ClientMessage): void {
    if (connection.phase === 'hello') {
      if (message.type !== 'hello' || typeof message.nonce !== 'string') throw new FrameError('expected hello')
      connection.theirNonce = message.nonce
      connection.role = message.role === 'sidecar' ? 'sidecar' : 'control'
      connection.peer = `${connection.role}, termkeep ${String(message.software).slice(0, 40)}`
      connection.phase = 'auth'
      connection.send({
        type: 'welcome',
        protocol: KEEPER_PROTOCOL,
        nonce: connection.nonce,
        proof: proofOf(this.#secret, 'keeper', message.nonce, connection.nonce),
        keeper: this.#info,
      })
      if (!Array.isArray(message.protocols) || !message.protocols.includes(KEEPER_PROTOCOL)) connection.phase = 'hello' // it leaves
      return
    }
    if (connection.phase === 'auth') {
      if (message.type !== 'auth' || !proofHolds(this.#secret, 'client', connection.nonce, connection.theirNonce, message.proof)) {
        log('refused a connection that did not prove it holds the keeper secret')
        connection.send({ type: 'refused', reason: 'no proof of the keeper secret' })
        connection.socket.end()
        return
      }
      if (connection.role === 'sidecar' && this.#sidecar) {
        connection.send({ type: 'refused', reason: `a sidecar is connected already (${this.#sidecar.peer})` })
        connection.socket.end()
        return
      }
      connection.phase = 'ready'
      if (connection.role === 'sidecar') {
        this.#sidecar = connection
        log(`a sidecar connected (${connection.peer})`)
      }
      connection.send({ type: 'ready' })
      return
    }
    void this.#request(connection, message)
  }

  async #request(connection: Connection, message: ClientMessage): Promise<void> {
    if (!('req' in message) || typeof message.req !== 'number') throw new FrameError(`unexpected ${message.type}`)
    const req = message.req
    try {
      const value = await this.#handle(connection, message)
      connection.send({ type: 'reply', req, ok: true, value })
    } catch (error) {
      connection.send({ type: 'reply', req, ok: false, error: (error as Error).message })
    }
  }

  async #handle(connection: Connection, message: ClientMessage): Promise<unknown> {
    const terminals = this.#terminals
    switch (message.type) {
      case 'list':
        // The backlog now, the live edge from here on: one step, nothing between.
        if (connection === this.#sidecar) terminals.subscribe(connection)
        return terminals.list()
      case 'spawn': {
        const terminal = await terminals.spawn(message.sessionId, message.terminalId, message.options)
        log(`started ${terminal.key} (pid ${terminal.pty?.pid})`)
        return terminal.state()
      }
      case 'resize':
        await terminals.resize(message.id, message.cols, message.rows)
        return null
      case 'close':
        return terminals.close(message.id, message.graceMs)
      case 'release':
        await terminals.release(message.id)
        return null
      case 'sweep': {
        const { killed, survivors } = await killLeftovers(message.terminals)
        if (killed.size > 0)
          log(`killed what earlier terminals left running: ${[...killed].map(([k, pids]) => `${k}: ${pids.join(' ')}`).join('; ')}`)
        return { killed: Object.fromEntries(killed), survivors }
      }
      default:
        throw new FrameError(`unknown request ${(message as { type: string }).type}`)
    }
  }
}
