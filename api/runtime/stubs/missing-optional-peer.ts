/**
 * Stands in for optional peers that hono-openapi's vendor adapters import lazily (effect, sury,
 * zod, zod-openapi, zod-to-json-schema, …). termkeep describes its routes with valibot only, so
 * these code paths never run; wrangler.toml aliases the specifiers here so the Workers bundle
 * neither dangles on unresolved imports nor drags in zod. Reaching this module is a bug.
 */
function missing(): never {
  throw new Error('termkeep: an optional hono-openapi vendor (not valibot) was loaded on Workers')
}

export default new Proxy({}, { get: missing })
