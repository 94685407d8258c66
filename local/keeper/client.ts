/**
 * The client side of the keeper protocol (protocol.ts): connect to a data directory's keeper,
 * prove both sides, then requests (each answered by one `reply`, matched by `req`) and, for the
 * sidecar, the keeper's notifications in the order the keeper sent them. Used by the sidecar
 * (sidecar/terminals/keeper-link.ts), by `termkeep serve` and `termkeep stop`, and by tests.
 */
import { connect, type Socket } from 'node:net'
import { ENTRY_BYTES } from '../journal/format.ts'
import { FrameError, FrameReader, inputHeader, jsonFrame, keyedInputHeader, parseJson, parseRecords, type Records } from './frames.ts'
import type { KeeperPaths } from './paths.ts'
import { newNonce, proofHolds, proofOf, readSecret } from './proof.ts'
import {
  CLIENT_PROTOCOLS,
  type ClientMessage,
  FRAME_JSON,
  FRAME_RECORDS,
  type KeeperInfo,
  type KeeperMessage,
  type KeptInputKey,
  type Replies,
  type Role,
} from './protocol.ts'

/** Nobody answers at the socket (no keeper runs), or it went away before the handshake ended. */
export class KeeperUnreachable extends Error {
  override name = 'KeeperUnreachable'
}

/** Something answers at the socket but this client must not use it: it did not prove it is the
 * data directory's keeper (`impostor`), it refused this client, or it speaks a protocol this
 * release cannot (`incompatible`). */
export class KeeperRefused extends Error {
  override name = 'KeeperRefused'
  constructor(
    readonly why: 'impostor' | 'refused' | 'incompatible',
    message: string,
    readonly keeper?: KeeperInfo & { protocol: number },
  ) {
    super(message)
  }
}

/** The connection ended (the keeper went away, or closed it). */
export class KeeperGone extends Error {
  override name = 'KeeperGone'
}

export type Notification = Exclude<KeeperMessage, { type: 'welcome' | 'ready' | 'refused' | 'reply' | 'stopping' }>

export interface KeeperEvents {
  records(records: Records): void
  notification(message: Notification): void
  /** The connection ended; `error` says why when it was not this side's close(). */
  closed(error: Error | undefined): void
}

type Request = { [K in keyof Replies]: Extract<ClientMessage, { type: K }> }[keyof Replies]
type RequestBody<K extends keyof Replies> = Omit<Extract<ClientMessage, { type: K }>, 'req' | 'type'>

interface Pending {
  resolve(value: unknown): void
  reject(error: Error): void
  /** Runs in the order of the stream, before any later frame is handled. */
  before?: (value: unknown) => void
}

/** Input joined with its header into one write up to this size (a keystroke is one syscall). */
const JOIN_INPUT_BYTES = 16 * 1024

export interface ConnectOptions {
  role: Role
  /** This release (package.json version), for the keeper's log. */
  software: string
  timeoutMs: number
}

export class KeeperClient {
  readonly keeper: KeeperInfo
  readonly protocol: number
  readonly #socket: Socket
  readonly #reader: FrameReader
  readonly #pending = new Map<number, Pending>()
  #nextReq = 1
  #events: KeeperEvents | undefined
  #closed = false
  #closedByUs = false
  #stopping = false

  private constructor(socket: Socket, reader: FrameReader, keeper: KeeperInfo, protocol: number, rest: Buffer[]) {
    this.#socket = socket
    this.#reader = reader
    this.keeper = keeper
    this.protocol = protocol
    socket.on('data', (chunk: Buffer) => this.#receive(chunk))
    socket.on('error', () => {}) // 'close' follows and says it
    socket.once('close', () => this.#gone(this.#closedByUs ? undefined : new KeeperGone('the keeper closed the connection')))
    for (const chunk of rest) this.#receive(chunk)
  }

  /** Connects to the keeper at `paths` and proves both sides; throws KeeperUnreachable or
   * KeeperRefused (with what to do in its message). */
  static connect(paths: KeeperPaths, options: ConnectOptions): Promise<KeeperClient> {
    return new Promise((resolve, reject) => {
      let secret: Buffer
      try {
        secret = readSecret(paths.secret)
      } catch {
        return reject(new KeeperUnreachable(`no keeper secret at ${paths.secret}`))
      }
      const socket = connect(paths.socket)
      const reader = new FrameReader()
      const nonce = newNonce()
      let welcome: Extract<KeeperMessage, { type: 'welcome' }> | undefined
      let settled = false
      const buffered: Buffer[] = []
      const fail = (error: Error) => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        socket.destroy()
        reject(error)
      }
      const timer = setTimeout(() => fail(new KeeperUnreachable('the keeper did not answer the handshake in time')), options.timeoutMs)
      socket.once('connect', () => {
        socket.write(jsonFrame({ type: 'hello', protocols: CLIENT_PROTOCOLS, role: options.role, nonce, software: options.software }))
      })
      socket.on('error', (error: NodeJS.ErrnoException) => {
        const why = error.code === 'EACCES' ? ' (another user owns it?)' : ''
        fail(new KeeperUnreachable(`cannot reach the keeper at ${paths.socket}: ${error.code ?? error.message}${why}`))
      })
      socket.once('close', () => fail(new KeeperUnreachable('the keeper closed the connection during the handshake')))
      const onData = (chunk: Buffer) => {
        if (settled) return void buffered.push(chunk)
        try {
          reader.push(chunk, (frame) => {
            if (settled) return
            if (frame.kind !== FRAME_JSON) throw new FrameError('a binary frame during the handshake')
            const message = parseJson(frame.payload) as KeeperMessage
            if (!welcome) {
              if (message.type !== 'welcome') throw new FrameError(`${message.type} before welcome`)
              if (!proofHolds(secret, 'keeper', nonce, message.nonce, message.proof)) {
                return fail(
                  new KeeperRefused(
                    'impostor',
                    `the process listening at ${paths.socket} did not prove it is this data directory's keeper (was the socket replaced?)`,
                  ),
                )
              }
              welcome = message
              if (!CLIENT_PROTOCOLS.includes(message.protocol)) {
                return fail(
                  new KeeperRefused(
                    'incompatible',
                    `the keeper running for this data directory (pid ${message.keeper.pid}, termkeep ${message.keeper.software}) speaks keeper protocol ${message.protocol}; this termkeep speaks ${CLIENT_PROTOCOLS.join(', ')}. Its terminals keep running; to use this release, end them with \`termkeep stop --terminals\` and start again`,
                    { ...message.keeper, protocol: message.protocol },
                  ),
                )
              }
              socket.write(jsonFrame({ type: 'auth', proof: proofOf(secret, 'client', message.nonce, nonce) }))
              return
            }
            if (message.type === 'refused')
              return fail(new KeeperRefused('refused', `the keeper refused this connection: ${message.reason}`))
            if (message.type !== 'ready') throw new FrameError(`${message.type} before ready`)
            settled = true
            clearTimeout(timer)
            socket.removeAllListeners()
            const client = new KeeperClient(socket, reader, welcome.keeper, welcome.protocol, buffered)
            resolve(client)
          })
        } catch (error) {
          fail(
            error instanceof FrameError
              ? new KeeperRefused('impostor', `the keeper's handshake was broken: ${error.message}`)
              : (error as Error),
          )
        }
      }
      socket.on('data', onData)
    })
  }

  /** Receives the keeper's notifications from now on (set it before the first `list`). */
  listen(events: KeeperEvents): void {
    this.#events = events
  }

  get closed(): boolean {
    return this.#closed
  }

  /** The keeper said it is stopping (its terminals end with it). */
  get keeperStopping(): boolean {
    return this.#stopping
  }

  /**
   * One request. `before` runs with the reply at its place in the stream, before any frame the
   * keeper sent after it is handled (a spawn's terminal is known before its first output).
   */
  request<K extends keyof Replies>(type: K, body: RequestBody<K>, before?: (value: Replies[K]) => void): Promise<Replies[K]> {
    if (this.#closed) return Promise.reject(new KeeperGone('the connection to the keeper is closed'))
    const req = this.#nextReq++
    return new Promise((resolve, reject) => {
      this.#pending.set(req, { resolve: resolve as (value: unknown) => void, reject, before: before as Pending['before'] })
      this.#socket.write(jsonFrame({ ...body, type, req } as Request))
    })
  }

  /** Input for terminal `id`: one frame, raw bytes (with its Idempotency-Key, when it has one). */
  write(id: number, bytes: Uint8Array, key?: KeptInputKey): void {
    if (this.#closed) return
    const head = key ? keyedInputHeader(id, key, bytes.length) : inputHeader(id, bytes.length)
    if (bytes.length <= JOIN_INPUT_BYTES) {
      this.#socket.write(Buffer.concat([head, bytes]))
      return
    }
    this.#socket.cork()
    this.#socket.write(head)
    this.#socket.write(bytes)
    process.nextTick(() => this.#socket.uncork())
  }

  close(): void {
    this.#closedByUs = true
    this.#socket.end()
    this.#socket.destroySoon()
  }

  #receive(chunk: Buffer): void {
    try {
      this.#reader.push(chunk, (frame) => {
        if (frame.kind === FRAME_RECORDS) return this.#events?.records(parseRecords(frame.payload, ENTRY_BYTES))
        if (frame.kind !== FRAME_JSON) throw new FrameError(`an unknown frame kind ${frame.kind}`)
        const message = parseJson(frame.payload) as KeeperMessage
        if (message.type === 'stopping') return void (this.#stopping = true)
        if (message.type !== 'reply') return this.#events?.notification(message as Notification)
        const pending = this.#pending.get(message.req)
        if (!pending) return
        this.#pending.delete(message.req)
        if (!message.ok) return pending.reject(new Error(message.error))
        pending.before?.(message.value)
        pending.resolve(message.value)
      })
    } catch (error) {
      this.#socket.destroy()
      this.#gone(error as Error)
    }
  }

  #gone(error: Error | undefined): void {
    if (this.#closed) return
    this.#closed = true
    const reason = error ?? new KeeperGone('the connection to the keeper is closed')
    for (const pending of this.#pending.values()) pending.reject(reason)
    this.#pending.clear()
    this.#events?.closed(error)
  }
}
