import { describe, expect, it } from 'vitest'
import { deriveHostSecret } from './crypto.ts'

describe('deriveHostSecret', () => {
  const fleet = 'fleet-secret-0123456789'
  it('is the same for the same fleet secret and host, different for another host or fleet secret', async () => {
    const a = await deriveHostSecret(fleet, 'host_a')
    expect(a).toMatch(/^hs_[\w-]{43}$/)
    expect(await deriveHostSecret(fleet, 'host_a')).toBe(a)
    expect(await deriveHostSecret(fleet, 'host_b')).not.toBe(a)
    expect(await deriveHostSecret(`${fleet}x`, 'host_a')).not.toBe(a)
    expect(a).not.toContain(fleet)
  })

  it('refuses a fleet secret too short to derive from', async () => {
    await expect(deriveHostSecret('short', 'host_a')).rejects.toThrow(/too short/)
  })
})
