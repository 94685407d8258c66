/**
 * Bytes and their text forms, the one home of base64 for every runtime (Web APIs only: atob, btoa,
 * TextEncoder). The plain conversions first; then a stored resource's bytes from its wire text
 * (UTF-8 text, or base64), without holding the event loop: the size is known before any byte is made (an oversized resource is refused from its
 * length alone), and the text is converted in slices of CONTENT_SLICE_SIZE with a yield to the
 * loop between them, so every other request keeps being served while a 32 MiB attachment is
 * stored.
 * Measured here: a whole 32 MiB `Uint8Array.from(atob(…))` held the loop for 2.4 s; a slice
 * takes a few milliseconds.
 */
import { TermkeepError } from '../schema/errors.ts'
import { yieldToLoop } from './event-loop.ts'

/** Characters of a resource's wire text (base64 or UTF-8), or bytes of a large JSON body, the API
 * converts at once before it yields to its event loop: a few milliseconds each, where a whole
 * 32 MiB attachment held every other request for seconds. */
export const CONTENT_SLICE_SIZE = 1024 * 1024

/** `bytes` as base64. */
export function toBase64(bytes: Uint8Array): string {
  let binary = ''
  // In slices: String.fromCharCode takes its arguments on the stack.
  for (let at = 0; at < bytes.length; at += 0x8000) binary += String.fromCharCode(...bytes.subarray(at, at + 0x8000))
  return btoa(binary)
}

/** Base64 `text` as bytes; throws (atob's DOMException) for text that is not base64. */
export function fromBase64(text: string): Uint8Array<ArrayBuffer> {
  const binary = atob(text)
  const bytes = new Uint8Array(binary.length)
  for (let i = 0; i < binary.length; i++) bytes[i] = binary.charCodeAt(i)
  return bytes
}

/** Unpadded base64url, the one spelling termkeep issues (secrets, ids, signed cursors). */
export function toBase64url(bytes: Uint8Array): string {
  return toBase64(bytes).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/**
 * Unpadded base64url `text` as bytes, or undefined. Only the canonical encoding decodes: base64
 * leaves spare low bits in a final partial character, so without the round-trip check several
 * strings (a "flipped" last character) would decode to the same bytes.
 */
export function fromBase64url(text: string): Uint8Array<ArrayBuffer> | undefined {
  if (!/^[A-Za-z0-9_-]*$/.test(text)) return undefined
  let bytes: Uint8Array<ArrayBuffer>
  try {
    bytes = fromBase64(text.replace(/-/g, '+').replace(/_/g, '/') + '='.repeat((4 - (text.length % 4)) % 4))
  } catch {
    return undefined
  }
  return toBase64url(bytes) === text ? bytes : undefined
}

function invalidBase64(why: string): TermkeepError {
  return new TermkeepError('request/invalid', `content is not valid base64: ${why}`)
}

function tooLarge(limit: number): TermkeepError {
  return new TermkeepError('request/too-large', `a stored resource is at most ${limit} bytes`, { limit })
}

const paddingOf = (text: string) => (text.endsWith('==') ? 2 : text.endsWith('=') ? 1 : 0)

/**
 * Pure: the byte length `text` decodes to, from its length and final padding alone (RFC 4648
 * base64, padded or not), or a 400 for a length no base64 text has. The characters themselves
 * are checked while decoding.
 */
export function base64DecodedLength(text: string): number {
  const padding = paddingOf(text)
  if (padding > 0 && text.length % 4 !== 0) throw invalidBase64('padding "=" only completes a group of four characters')
  const data = text.length - padding
  if (data % 4 === 1) throw invalidBase64('a final group of one character encodes no byte')
  return Math.floor(data / 4) * 3 + (data % 4 === 0 ? 0 : (data % 4) - 1)
}

const BASE64_SLICE = /^[A-Za-z0-9+/]*$/

/** Decodes base64 `text` (at most `limit` bytes decoded: 413 otherwise, before any decoding). */
export async function decodeBase64(text: string, limit: number): Promise<Uint8Array<ArrayBuffer>> {
  const length = base64DecodedLength(text)
  if (length > limit) throw tooLarge(limit)
  const bytes = new Uint8Array(length)
  // Without its padding; any "=" left is in the wrong place, and the check of its slice says so.
  const data = text.slice(0, text.length - paddingOf(text))
  // Slices are whole groups of four characters, so each decodes on its own.
  const slice = CONTENT_SLICE_SIZE - (CONTENT_SLICE_SIZE % 4)
  let written = 0
  for (let at = 0; at < data.length; at += slice) {
    if (data.length > slice) await yieldToLoop()
    const part = data.slice(at, at + slice)
    if (!BASE64_SLICE.test(part)) throw invalidBase64('only A–Z, a–z, 0–9, "+" and "/", then at most two "="')
    const decoded = fromBase64(part)
    bytes.set(decoded, written)
    written += decoded.length
  }
  return bytes
}

/** `text` as UTF-8, slice by slice; 413 as soon as the slices pass `limit` bytes. */
async function* utf8Slices(text: string, limit: number): AsyncGenerator<Uint8Array> {
  const encoder = new TextEncoder()
  let length = 0
  for (let at = 0; at < text.length; ) {
    if (text.length > CONTENT_SLICE_SIZE) await yieldToLoop()
    let end = Math.min(at + CONTENT_SLICE_SIZE, text.length)
    // Never between the halves of a surrogate pair: each half alone would encode as U+FFFD.
    const last = text.charCodeAt(end - 1)
    if (end < text.length && last >= 0xd800 && last <= 0xdbff) end++
    const part = encoder.encode(text.slice(at, end))
    length += part.length
    if (length > limit) throw tooLarge(limit)
    yield part
    at = end
  }
}

/** Encodes `text` as UTF-8 (at most `limit` bytes, else 413). */
export async function encodeUtf8(text: string, limit: number): Promise<Uint8Array<ArrayBuffer>> {
  const parts: Uint8Array[] = []
  for await (const part of utf8Slices(text, limit)) parts.push(part)
  return concatBytes(parts)
}

/** Pure: `parts` as one array. */
export function concatBytes(parts: readonly Uint8Array[]): Uint8Array<ArrayBuffer> {
  const bytes = new Uint8Array(parts.reduce((sum, part) => sum + part.length, 0))
  let offset = 0
  for (const part of parts) {
    bytes.set(part, offset)
    offset += part.length
  }
  return bytes
}
