/** Random secrets and their stored form (SHA-256, hex), with Web Crypto only. */

/** Unpadded base64url, the one spelling termkeep issues. */
export function base64url(bytes: Uint8Array): string {
  let binary = ''
  for (const byte of bytes) binary += String.fromCharCode(byte)
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '')
}

/** A fresh random secret with a recognizable prefix (e.g. `tk_…`). */
export function randomSecret(prefix: string, bytes = 24): string {
  return `${prefix}_${base64url(crypto.getRandomValues(new Uint8Array(bytes)))}`
}

export function randomId(prefix: string): string {
  return randomSecret(prefix, 12)
}

export async function hashSecret(secret: string): Promise<string> {
  const digest = await crypto.subtle.digest('SHA-256', new TextEncoder().encode(secret))
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, '0')).join('')
}
