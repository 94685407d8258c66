/** The bundled page route: `/` and hashed assets, with the right types, and a fresh bundle. */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { web } from '../../api/routes/web.ts'
import { ASSETS } from '../../web/assets.gen.ts'
import { GENERATED, generateAssetsModule } from '../../web/build.ts'

describe('the web page route', () => {
  it('serves / as HTML that references its hashed assets, uncached, without a token', async () => {
    const response = await web.request('/')
    expect(response.status).toBe(200)
    expect(response.headers.get('content-type')).toBe('text/html; charset=utf-8')
    expect(response.headers.get('cache-control')).toBe('no-cache')
    expect(response.headers.get('content-security-policy')).toContain("script-src 'self'")
    const html = await response.text()
    const refs = [...html.matchAll(/\/assets\/([\w.-]+)/g)].map((m) => m[1])
    expect(refs.sort()).toEqual(Object.keys(ASSETS).sort())
    for (const name of refs) {
      const asset = await web.request(`/assets/${name}`)
      expect(asset.status).toBe(200)
      expect(asset.headers.get('content-type')).toBe(name.endsWith('.js') ? 'text/javascript; charset=utf-8' : 'text/css; charset=utf-8')
      expect(asset.headers.get('cache-control')).toContain('immutable')
      expect((await asset.text()).length).toBeGreaterThan(1000)
    }
  })

  it('answers an unknown asset with 404', async () => {
    expect((await web.request('/assets/nope.js')).status).toBe(404)
    expect((await web.request('/assets/constructor')).status).toBe(404)
  })

  // The bundle also takes in common/ (the display codec, xterm conventions, bytes) and schema/ (limits, display wire types).
  it('is built from the current sources (run `npm run build:web` after editing web/, common/ or schema/)', async () => {
    const fresh = readFileSync(GENERATED, 'utf8') === (await generateAssetsModule())
    expect(fresh, 'web/assets.gen.ts is stale: run `npm run build:web` and commit it').toBe(true)
  })
})
