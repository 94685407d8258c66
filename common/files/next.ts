/**
 * readText continuations: an opaque `{cursor}` the caller sends back whole. The cursor is a
 * base64url JSON payload plus an HMAC over (session, token, payload), so it is tamper-evident and
 * opens nothing for another session or another token: any mismatch verifies as "no such
 * continuation", answered exactly like a missing resource. Web Crypto only.
 */
import { TermkeepError } from '../../schema/errors.ts'
import { fromBase64url, toBase64url } from '../bytes.ts'
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

/** Pure: the exact bytes the MAC covers. Newlines cannot occur in ids or base64url. */
function signedBytes(binding: Binding, payload: string): Uint8Array<ArrayBuffer> {
  return encoder.encode(`termkeep.read-text.v1\n${binding.sessionId}\n${binding.tokenId}\n${payload}`)
}

export async function signContinuation(key: CryptoKey, binding: Binding, continuation: Continuation): Promise<ReadTextNext> {
  const payload = toBase64url(encoder.encode(JSON.stringify(continuation)))
  const mac = new Uint8Array(await crypto.subtle.sign('HMAC', key, signedBytes(binding, payload)))
  return { cursor: `${payload}.${toBase64url(mac)}` }
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
