/**
 * Stands in, on Workers, for modules whose code paths termkeep never runs (wrangler.toml
 * `[alias]` says why for each): optional peers that hono-openapi's vendor adapters import lazily
 * (effect, sury, zod-openapi, zod/v4/core: routes are described with valibot only), and Ajv, the
 * MCP SDK's default validator for elicitation answers (termkeep never elicits). The Workers bundle
 * then neither dangles on unresolved imports nor carries them. Reaching this module is a bug.
 */
function missing(): never {
  throw new Error('termkeep: a module stubbed out of the Workers bundle was used (wrangler.toml [alias])')
}

export default new Proxy({}, { get: missing })
