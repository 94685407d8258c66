/** Origin and Host validation (DNS rebinding), as pure decisions. */
import { describe, expect, it } from 'vitest'
import { hostAllowed, isLoopbackName, LOOPBACK_ONLY, originAllowed, originPolicy } from './origin.ts'

describe('isLoopbackName', () => {
  it.each([
    ['localhost', true],
    ['LOCALHOST.', true],
    ['app.localhost', true],
    ['127.0.0.1', true],
    ['127.8.9.10', true],
    ['[::1]', true],
    ['localhost.example.com', false],
    ['128.0.0.1', false],
    ['evil.example.com', false],
    ['0.0.0.0', false],
  ])('%s: %s', (name, loopback) => expect(isLoopbackName(name)).toBe(loopback))
})

describe('hostAllowed', () => {
  const configured = { allowedOrigins: [], allowedHosts: ['tk.example.com', 'devbox:8787'] }
  it.each([
    [LOOPBACK_ONLY, '127.0.0.1:8787', true],
    [LOOPBACK_ONLY, 'localhost', true],
    [LOOPBACK_ONLY, '[::1]:8787', true],
    [LOOPBACK_ONLY, 'evil.example.com', false],
    [LOOPBACK_ONLY, 'evil.example.com:8787', false],
    [configured, 'tk.example.com:443', true],
    [configured, 'devbox:8787', true],
    [configured, 'devbox:9999', false],
    [{ allowedOrigins: [], allowedHosts: undefined }, 'anything.example', true],
  ])('%j, Host %s: %s', (policy, host, allowed) => expect(hostAllowed(policy, host)).toBe(allowed))
})

describe('originAllowed', () => {
  const own = 'http://127.0.0.1:8787'
  it.each([
    ['http://127.0.0.1:8787', true], // the page itself
    ['http://localhost:5173', true],
    ['https://[::1]', true],
    ['http://evil.example.com', false],
    ['http://127.0.0.1.evil.example.com', false],
    ['null', false],
    ['file://', false],
    ['http://localhost:8787/path', false], // not an origin
    ['https://tk.example.com', true], // configured
  ])('Origin %s: %s', (origin, allowed) =>
    expect(originAllowed({ allowedOrigins: ['https://tk.example.com'], allowedHosts: [] }, origin, own)).toBe(allowed),
  )
})

describe('originPolicy', () => {
  it('checks hosts where the API listens on loopback, and none elsewhere unless configured', () => {
    const none = { allowedOrigins: [], allowedHosts: undefined }
    expect(originPolicy(none, '127.0.0.1').allowedHosts).toEqual([])
    expect(originPolicy(none, '::1').allowedHosts).toEqual([])
    expect(originPolicy(none, '0.0.0.0').allowedHosts).toBeUndefined()
    expect(originPolicy(none, undefined).allowedHosts).toBeUndefined()
    expect(originPolicy({ allowedOrigins: [], allowedHosts: ['a.example'] }, '0.0.0.0').allowedHosts).toEqual(['a.example'])
  })
})
