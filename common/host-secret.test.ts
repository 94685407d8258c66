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

  it('changes with the epoch (a rotation) and only for that host; epoch 0 is the id alone', async () => {
    const a0 = await deriveHostSecret(fleet, 'host_a')
    expect(await deriveHostSecret(fleet, 'host_a', 0)).toBe(a0)
    const a1 = await deriveHostSecret(fleet, 'host_a', 1)
    expect(a1).toMatch(/^hs_[\w-]{43}$/)
    expect(a1).not.toBe(a0)
    expect(await deriveHostSecret(fleet, 'host_a', 2)).not.toBe(a1)
    expect(await deriveHostSecret(fleet, 'host_b')).not.toBe(a1)
    await expect(deriveHostSecret(fleet, 'host_a', -1)).rejects.toThrow(/epoch/)
    await expect(deriveHostSecret(fleet, 'host_a', 1.5)).rejects.toThrow(/epoch/)
  })

  it('refuses a fleet secret too short to derive from', async () => {
    await expect(deriveHostSecret('short', 'host_a')).rejects.toThrow(/too short/)
  })
})
