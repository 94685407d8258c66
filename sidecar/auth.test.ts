/**
 * The sidecar's shared secret guards every route: a missing, wrong or differently-shaped
 * Authorization header gets 401 `auth/invalid-token` before any route runs (the deps below are
 * empty, so a route that ran would fail with a 500).
 */
import { describe, expect, it } from 'vitest'
import { createSidecarApp, type SidecarDeps } from './app.ts'

const SECRET = 'sidecar-secret-for-tests'
const app = createSidecarApp({ secret: SECRET, generation: 7, health: { current: () => undefined } } as unknown as SidecarDeps)

describe('sidecar secret', () => {
  it('lets the right secret through', async () => {
    const response = await app.request('/v1/health', { headers: { authorization: `Bearer ${SECRET}` } })
    expect(response.status).toBe(200)
    expect(await response.json()).toMatchObject({ ok: true, generation: 7 })
  })

  for (const [name, header] of [
    ['no header', undefined],
    ['a wrong secret', `Bearer ${SECRET}x`],
    ['a prefix of the secret', `Bearer ${SECRET.slice(0, -1)}`],
    ['another scheme', `Basic ${SECRET}`],
    ['the bare secret', SECRET],
    ['an empty bearer', 'Bearer '],
  ] as const) {
    it(`refuses ${name} on every route with 401 auth/invalid-token`, async () => {
      const headers: Record<string, string> = header === undefined ? {} : { authorization: header }
      for (const [method, path] of [
        ['GET', '/v1/health'],
        ['POST', '/v1/sessions/s1/terminals/t1/input'],
        ['GET', '/v1/sessions/s1/terminals'],
      ]) {
        const response = await app.request(path, { method, headers, body: method === 'POST' ? 'x' : undefined })
        expect(response.status, `${method} ${path}`).toBe(401)
        expect(await response.json()).toMatchObject({ error: { code: 'auth/invalid-token' } })
      }
    })
  }
})
