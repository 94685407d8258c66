/**
 * Mutual proof between the keeper and its clients. The socket's modes (0600, in a 0700
 * directory) keep other users out; the proof also keeps out a process of the same user that does
 * not know the data directory's keeper secret, and lets a client tell the real keeper from
 * whatever else listens at the socket path (a replaced socket, a keeper of another data directory
 * whose directory was copied). Each side proves it holds the secret by an HMAC over both sides'
 * fresh nonces, bound to its role, so no proof can be replayed or reflected. Not defended: a
 * process of the same user can read the secret file, or ptrace either side.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'
import { readFileSync, writeFileSync } from 'node:fs'

const SECRET_BYTES = 32
const NONCE_BYTES = 16

export const newNonce = () => randomBytes(NONCE_BYTES).toString('hex')

/** The keeper's: the secret in `path`, created (0600) when missing. */
export function keeperSecret(path: string): Buffer {
  try {
    writeFileSync(path, `${randomBytes(SECRET_BYTES).toString('hex')}\n`, { mode: 0o600, flag: 'wx' })
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
  }
  return readSecret(path)
}

/** A client's: the secret in `path` (throws when it cannot be read). */
export function readSecret(path: string): Buffer {
  const secret = Buffer.from(readFileSync(path, 'utf8').trim(), 'hex')
  if (secret.length < SECRET_BYTES) throw new Error(`${path} does not hold a keeper secret`)
  return secret
}

/** The proof `role` gives: its own nonce last, so a keeper's proof is never a client's. */
export function proofOf(secret: Buffer, role: 'keeper' | 'client', theirs: string, mine: string): string {
  return createHmac('sha256', secret).update(`termkeep-keeper-proof\0${role}\0${theirs}\0${mine}`).digest('hex')
}

export function proofHolds(secret: Buffer, role: 'keeper' | 'client', theirs: string, mine: string, proof: unknown): boolean {
  if (typeof proof !== 'string') return false
  const expected = Buffer.from(proofOf(secret, role, theirs, mine), 'hex')
  const given = Buffer.from(proof, 'hex')
  return given.length === expected.length && timingSafeEqual(given, expected)
}
