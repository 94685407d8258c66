/** Random secrets and ids, their stored form (SHA-256, hex) and derived signing keys, with Web Crypto only. */
import { toBase64url } from './bytes.ts'

/** A fresh random secret with a recognizable prefix (e.g. `tk_…`). */
export function randomSecret(prefix: string, bytes = 24): string {
  return `${prefix}_${toBase64url(crypto.getRandomValues(new Uint8Array(bytes)))}`
}

/** A random id fit for every termkeep id (`^[\w-]{1,128}$`): the prefix, `_`, 16 base64url characters. */
export function randomId(prefix: string): string {
  return randomSecret(prefix, 12)
}

export async function hashSecret(secret: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(secret))
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')
}

/**
 * An HMAC-SHA-256 key derived (HKDF) from the shared sidecar secret for one purpose, e.g. signing
 * readText continuations. Every API instance and the sidecar derive the same key from the same
 * secret, so what one signs another verifies.
 */
export function deriveSigningKey(secret: string, purpose: string): Promise<CryptoKey> {
  // Configuration guarantees ≥ 16 characters; a blank secret would make every signature forgeable.
  if (secret.length < 16) throw new Error('the sidecar secret is too short to derive a signing key')
  const encode = (s: string) => new TextEncoder().encode(s)
  return crypto.subtle
    .importKey('raw', encode(secret), 'HKDF', false, ['deriveKey'])
    .then((material) =>
      crypto.subtle.deriveKey(
        { name: 'HKDF', hash: 'SHA-256', salt: encode('termkeep'), info: encode(purpose) },
        material,
        { name: 'HMAC', hash: 'SHA-256', length: 256 },
        false,
        ['sign', 'verify'],
      ),
    )
}

/**
 * A host's sidecar secret, derived (HKDF-SHA-256) from the fleet secret, the host's id and its
 * secret epoch (hosts.secret_epoch, bumped by each rotation): the API derives each host's from the
 * one secret it holds, and a host holds only its own, so one compromised host's secret opens that
 * host only, and rotating it touches no other host. Epoch 0 derives from the id alone (the
 * secrets hosts had before rotation existed). Web Crypto: it runs on Workers too.
 */
export async function deriveHostSecret(fleetSecret: string, hostId: string, epoch = 0): Promise<string> {
  if (!Number.isSafeInteger(epoch) || epoch < 0) throw new Error(`a host secret epoch is a whole number ≥ 0, not ${epoch}`)
  if (fleetSecret.length < 16) throw new Error('the fleet secret is too short to derive a host secret')
  const encode = (s: string) => new TextEncoder().encode(s)
  const material = await crypto.subtle.importKey('raw', encode(fleetSecret), 'HKDF', false, ['deriveBits'])
  const bits = await crypto.subtle.deriveBits(
    { name: 'HKDF', hash: 'SHA-256', salt: encode('termkeep host secret'), info: encode(epoch === 0 ? hostId : `${hostId}/${epoch}`) },
    material,
    256,
  )
  return `hs_${toBase64url(new Uint8Array(bits))}`
}
