/**
 * The bundled page: `/` and its hashed assets, served from strings generated at build time
 * (web/assets.gen.ts), so it works without a filesystem (Workers included). No token is needed to
 * load the page; everything it shows comes from the API under the user's token.
 */
import { Hono } from 'hono'
import { ASSETS, INDEX_HTML } from '../../web/assets.gen.ts'
import type { AppEnv } from '../deps.ts'

/** The page talks only to its own origin; xterm.js adds <style> elements, hence 'unsafe-inline'. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; connect-src 'self'; img-src 'self' data:; font-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

export const web = new Hono<AppEnv>()
  .get('/', (c) =>
    c.body(INDEX_HTML, 200, {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'no-cache',
      'content-security-policy': CSP,
      'x-content-type-options': 'nosniff',
      'referrer-policy': 'no-referrer',
    }),
  )
  .get('/assets/:name', (c) => {
    const asset = Object.hasOwn(ASSETS, c.req.param('name')) ? ASSETS[c.req.param('name')] : undefined
    if (!asset) return c.notFound()
    return c.body(asset.body, 200, {
      'content-type': asset.type,
      'cache-control': 'public, max-age=31536000, immutable',
      'x-content-type-options': 'nosniff',
    })
  })
