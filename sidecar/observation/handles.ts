/**
 * Opaque observation handles. A handle names one object (a process, a file, a directory, the
 * terminal itself) bound to its session, terminal and the terminal's incarnation, plus the
 * object's identity: a process by pid *and* start time (a reused pid never matches), a file or
 * directory by device, inode and canonical path — and its birth time where the filesystem keeps
 * one, since a file deleted and created again under its name often gets the same inode back.
 *
 * The id is `h1.<kind>.<data>.<tag>`: the payload is encrypted (AES-256-CTR) so nothing in it —
 * a canonical path, a pid — is observable, and authenticated (HMAC-SHA-256 over kind and
 * ciphertext), so a tampered or forged id is refused before it is decrypted. The IV is an HMAC of
 * the payload (the SIV construction): the same object always gets the same id, which lets a
 * `watchDirectory` tell an unchanged listing by comparing it, and equal ids are the only thing
 * it reveals. Three keys, each derived with HKDF from SIDECAR_SECRET exactly as the API's
 * `signingKey` derives its own (salt `termkeep`, info = purpose), so every sidecar of a
 * deployment, and a test that knows the secret, derives the same ones. Written here because no
 * kept library offers deterministic authenticated encryption in Node's crypto alone.
 */
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'
import type { BigIntStats } from 'node:fs'
import * as v from 'valibot'

/** t: terminal, j: project, e: environment, p: process, f: file, d: directory. */
export type HandleKind = 't' | 'j' | 'e' | 'p' | 'f' | 'd'

/** What every handle is bound to. */
export interface Binding {
  sessionId: string
  terminalId: string
  /** The terminal's incarnation: its sidecar generation and creation time. */
  incarnation: string
}

export interface ProcessIdentity {
  pid: number
  startTicks: number
}

/** Where a file or directory handle is confined: the canonical root it was found beneath
 * (`home`, or the variable whose value it is), and the object's identity. */
export interface ObjectIdentity {
  dev: string
  ino: string
  /** Birth time in ns ('0' where the filesystem has none). */
  born: string
}

/** The identity of what `stats` describes. */
export function objectOf(stats: BigIntStats): ObjectIdentity {
  return { dev: String(stats.dev), ino: String(stats.ino), born: String(stats.birthtimeNs) }
}

/** Is `stats` the object `identity` names? */
export function sameObject(stats: BigIntStats, identity: ObjectIdentity): boolean {
  const now = objectOf(stats)
  return now.dev === identity.dev && now.ino === identity.ino && now.born === identity.born
}

export interface PathIdentity extends ObjectIdentity {
  path: string
  root: string
  base: 'home' | `env:${string}`
}

export type HandleBody = { kind: 't' | 'j' | 'e'; fact: string } | ({ kind: 'p' } & ProcessIdentity) | ({ kind: 'f' | 'd' } & PathIdentity)

const Payload = v.object({
  s: v.string(),
  t: v.string(),
  i: v.string(),
  b: v.variant('kind', [
    v.object({ kind: v.picklist(['t', 'j', 'e']), fact: v.string() }),
    v.object({ kind: v.literal('p'), pid: v.pipe(v.number(), v.safeInteger()), startTicks: v.pipe(v.number(), v.safeInteger()) }),
    v.object({
      kind: v.picklist(['f', 'd']),
      path: v.string(),
      dev: v.string(),
      ino: v.string(),
      born: v.string(),
      root: v.string(),
      base: v.custom<PathIdentity['base']>((x) => typeof x === 'string' && (x === 'home' || x.startsWith('env:'))),
    }),
  ]),
})

/** The body with its fields in one fixed order (and nothing else), so one object always has one id
 * whichever way the caller built it. */
function canonical(body: HandleBody): HandleBody {
  switch (body.kind) {
    case 't':
    case 'j':
    case 'e':
      return { kind: body.kind, fact: body.fact }
    case 'p':
      return { kind: body.kind, pid: body.pid, startTicks: body.startTicks }
    default:
      return { kind: body.kind, path: body.path, dev: body.dev, ino: body.ino, born: body.born, root: body.root, base: body.base }
  }
}

const ID = /^h1\.([tjepfd])\.([A-Za-z0-9_-]{24,})\.([A-Za-z0-9_-]{43})$/

/** Ids minted recently, by payload: a provider polling `descendants` asks for the same 200
 * handles again and again, and each costs two HMACs and an AES pass. */
const MINTED_CACHE_ENTRIES = 4_096

/** A 32-byte key for one purpose, derived from the sidecar secret (HKDF, salt `termkeep`). */
export function observationKey(secret: string, purpose: string): Buffer {
  if (secret.length < 16) throw new Error('the sidecar secret is too short to derive observation keys')
  return Buffer.from(hkdfSync('sha256', secret, 'termkeep', purpose, 32))
}

export class HandleCodec {
  readonly #mac: Buffer
  readonly #iv: Buffer
  readonly #enc: Buffer
  readonly #minted = new Map<string, string>()

  constructor(secret: string) {
    const key = (purpose: string) => observationKey(secret, purpose)
    this.#mac = key('observation-handle-mac')
    this.#iv = key('observation-handle-iv')
    this.#enc = key('observation-handle-enc')
  }

  mint(binding: Binding, body: HandleBody): { id: string } {
    const text = JSON.stringify({ s: binding.sessionId, t: binding.terminalId, i: binding.incarnation, b: canonical(body) })
    const known = this.#minted.get(text)
    if (known !== undefined) return { id: known }
    const plain = Buffer.from(text)
    const iv = this.#sivOf(body.kind, plain)
    const cipher = createCipheriv('aes-256-ctr', this.#enc, iv)
    const data = Buffer.concat([iv, cipher.update(plain), cipher.final()])
    const id = `h1.${body.kind}.${data.toString('base64url')}.${this.#tagOf(body.kind, data).toString('base64url')}`
    if (this.#minted.size >= MINTED_CACHE_ENTRIES) this.#minted.delete(this.#minted.keys().next().value!)
    this.#minted.set(text, id)
    return { id }
  }

  /**
   * The body of a handle this codec minted for `binding`, of one of `kinds`; undefined for
   * anything else (malformed, tampered, foreign, another terminal or incarnation, other kind).
   */
  open<K extends HandleKind>(id: string, binding: Binding, kinds: readonly K[]): Extract<HandleBody, { kind: K }> | undefined {
    const match = ID.exec(id)
    if (!match || !kinds.includes(match[1] as K)) return undefined
    const kind = match[1] as K
    const data = Buffer.from(match[2], 'base64url')
    const tag = Buffer.from(match[3], 'base64url')
    if (data.length <= 16 || tag.length !== 32 || !timingSafeEqual(tag, this.#tagOf(kind, data))) return undefined
    const iv = data.subarray(0, 16)
    const decipher = createDecipheriv('aes-256-ctr', this.#enc, iv)
    const plain = Buffer.concat([decipher.update(data.subarray(16)), decipher.final()])
    if (!timingSafeEqual(iv, this.#sivOf(kind, plain))) return undefined
    let parsed: unknown
    try {
      parsed = JSON.parse(plain.toString('utf8'))
    } catch {
      return undefined
    }
    const result = v.safeParse(Payload, parsed)
    if (!result.success) return undefined
    const { s, t, i, b } = result.output
    if (s !== binding.sessionId || t !== binding.terminalId || i !== binding.incarnation || b.kind !== kind) return undefined
    return b as Extract<HandleBody, { kind: K }>
  }

  #sivOf(kind: string, plain: Buffer): Buffer {
    return createHmac('sha256', this.#iv).update(kind).update(plain).digest().subarray(0, 16)
  }

  #tagOf(kind: string, data: Buffer): Buffer {
    return createHmac('sha256', this.#mac).update(`h1.${kind}.`).update(data).digest()
  }
}
