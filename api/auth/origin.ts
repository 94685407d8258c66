/**
 * Origin and Host validation on `/mcp` and `/v1/*` (the MCP Streamable HTTP transport says a
 * server MUST validate `Origin` and answer 403 to a present, invalid one): against DNS rebinding,
 * where a page on an attacker's name that resolves to this machine talks to the API as if it were
 * its own origin. Requests without `Origin` — curl, the CLI, agents, MCP clients outside a
 * browser — are not browser requests and pass.
 *
 * - `Host`: a loopback name (localhost, *.localhost, 127.0.0.0/8, [::1]), or one the deployment
 *   allows (TERMKEEP_ALLOWED_HOSTS). Where the API cannot tell which names reach it (it listens
 *   on a non-loopback address, or runs on Deno or Workers) and none are configured, any Host.
 * - `Origin`, when present: a loopback origin, one the deployment allows (TERMKEEP_ALLOWED_ORIGINS),
 *   or the page's own — the request's scheme and Host, once that Host passed the check above.
 *
 * The decisions, pure; origin-guard.ts applies them to each request.
 */
export interface OriginPolicy {
  /** Origins allowed besides loopback ones and the page's own. */
  allowedOrigins: readonly string[]
  /** Host names (`host` or `host:port`) allowed besides loopback ones; undefined: any host. */
  allowedHosts: readonly string[] | undefined
}

/** The policy of an API listening on loopback with nothing configured: the default. */
export const LOOPBACK_ONLY: OriginPolicy = { allowedOrigins: [], allowedHosts: [] }

/** Pure: is this host name (no port; IPv6 in brackets) one of this machine's loopback names? */
export function isLoopbackName(hostname: string): boolean {
  const name = hostname.toLowerCase().replace(/\.$/, '')
  return name === 'localhost' || name.endsWith('.localhost') || /^127(\.\d{1,3}){3}$/.test(name) || name === '[::1]'
}

/** Pure: the policy for an API on `listening` (its bind address; undefined where it cannot tell). */
export function originPolicy(
  config: { allowedOrigins: readonly string[]; allowedHosts: readonly string[] | undefined },
  listening: string | undefined,
): OriginPolicy {
  const onLoopback = listening !== undefined && isLoopbackName(listening.includes(':') ? `[${listening}]` : listening)
  return { allowedOrigins: config.allowedOrigins, allowedHosts: config.allowedHosts ?? (onLoopback ? [] : undefined) }
}

/** `host[:port]` → its host name (IPv6 kept in brackets). */
function hostnameOf(host: string): string {
  return host.startsWith('[') ? host.slice(0, host.indexOf(']') + 1) : host.split(':')[0]!
}

/** Pure: may a request name this Host? */
export function hostAllowed(policy: OriginPolicy, host: string): boolean {
  if (policy.allowedHosts === undefined) return true
  const lower = host.toLowerCase()
  return (
    isLoopbackName(hostnameOf(lower)) ||
    policy.allowedHosts.some((allowed) => {
      const entry = allowed.toLowerCase()
      return entry === lower || entry === hostnameOf(lower)
    })
  )
}

/** Pure: may a page of `origin` talk to the API answering at `own` (its scheme and Host)? */
export function originAllowed(policy: OriginPolicy, origin: string, own: string): boolean {
  let parsed: URL
  try {
    parsed = new URL(origin)
  } catch {
    return false // `null` (a sandboxed frame, a file:) and anything else that is no origin
  }
  if (parsed.origin !== origin || !/^https?:$/.test(parsed.protocol)) return false
  return isLoopbackName(parsed.hostname) || policy.allowedOrigins.includes(origin) || origin === own.toLowerCase()
}
