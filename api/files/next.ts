/**
 * readText continuations: an opaque `{cursor}` the caller sends back whole. The cursor is a
 * base64url JSON payload plus an HMAC over (session, token, payload), so it is tamper-evident and
 * opens nothing for another session or another token: any mismatch verifies as "no such
 * continuation", answered exactly like a missing resource. Web Crypto only.
 */
import { TermkeepError } from '../../schema/errors.ts'
import { base64url } from '../../common/crypto.ts'
import type { ReadTextNext } from '../../schema/wire/files.ts'

/** What a continuation remembers. `byte` is where line `offset` starts (immutable resources only). */
export interface Continuation {
  address: string
  offset: number
  /** The page size the caller chose; a later request may change it. */
  limit: number
  byte?: number
}

export interface Binding {
  sessionId: string
  tokenId: string
}

const encoder = new TextEncoder()

/**
 * Only the canonical encoding decodes: base64 leaves spare low bits in a final partial character,
 * so without the round-trip check several cursor strings (a "flipped" last character) would
 * decode to the same MAC and be accepted as the one that was issued.
 */
function fromBase64url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined
  let bytes: Uint8Array<ArrayBuffer>
  try {
    const binary = atob(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4))
    bytes = Uint8Array.from(binary, (c) => c.charCodeAt(0))
  } catch {
    return undefined
  }
  return base64url(bytes) === text ? bytes : undefined
}

/** Pure: the exact bytes the MAC covers. Newlines cannot occur in ids or base64url. */
function signedBytes(binding: Binding, payload: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(`termkeep.read-text.v1\n${binding.sessionId}\n${binding.tokenId}\n${payload}`)
}

export async function signContinuation(key: CryptoKey, binding: Binding, continuation: Continuation): Promise<ReadTextNext> {
  const payload = base64url(encoder.encode(JSON.stringify(continuation)))
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, signedBytes(binding, payload)))
  return { cursor: `${payload}.${base64url(mac)}` }
}

export function unknownContinuation(): TermkeepError {
  return new TermkeepError('resource/not-found', 'no such continuation for this session')
}

/** The continuation, or `resource/not-found` for anything altered, foreign or malformed. */
export async function openContinuation(key: CryptoKey, binding: Binding, next: ReadTextNext): Promise<Continuation> {
  const [payload, macText, extra] = next.cursor.split('.')
  const mac = macText === undefined ? undefined : fromBase64url(macText)
  if (extra !== undefined || payload === undefined || !mac) throw unknownContinuation()
  if (!(await crypto.subtle.verify('HMAC', key, mac, signedBytes(binding, payload)))) throw unknownContinuation()
  const json = fromBase64url(payload)
  const value: unknown = json && JSON.parse(new TextDecoder().decode(json))
  if (!isContinuation(value)) throw unknownContinuation()
  return value
}

function isContinuation(value: unknown): value is Continuation {
  if (typeof value !== 'object' || value === null) return false
  const { address, offset, limit, byte } = value as Record<string, unknown>
  return (
    typeof address === 'string' &&
    Number.isSafeInteger(offset) &&
    (offset as number) >= 1 &&
    Number.isSafeInteger(limit) &&
    (limit as number) >= 1 &&
    (byte === undefined || (Number.isSafeInteger(byte) && (byte as number) >= 0))
  )
}
