/**
 * The page's addresses: `#/s/<session>` and `#/s/<session>/t/<terminal>` (never the token). A
 * link, a pasted address, Back and Forward all arrive as a hash change and switch the view; the
 * page's own moves push an entry so Back returns to where the user was, and a correction the user
 * did not ask for (the terminal picked for a session opened without one) replaces it.
 */

export interface Route {
  sessionId?: string
  terminalId?: string
}

const ID = '[\\w-]{1,128}'
const ROUTE = new RegExp(`^#/s/(${ID})(?:/t/(${ID}))?/?$`)

/** Pure: the route an address's hash names (`{}` for anything else). */
export function parseRoute(hash: string): Route {
  const match = ROUTE.exec(hash)
  return match ? { sessionId: match[1], terminalId: match[2] } : {}
}

/** Pure: the hash that names a route ('' for none). */
export function routeHash(route: Route): string {
  if (!route.sessionId) return ''
  return `#/s/${route.sessionId}${route.terminalId ? `/t/${route.terminalId}` : ''}`
}

/** Moves the address to `route`: a new history entry, or (`replace`) in place of the current one.
 * Neither fires hashchange: the caller shows the route itself. */
export function setRoute(route: Route, replace = false): void {
  const hash = routeHash(route)
  if (location.hash === hash) return
  const url = hash || location.pathname + location.search
  if (replace) history.replaceState(null, '', url)
  else history.pushState(null, '', url)
}

/** Calls `show` with the route whenever the address changes by a link, a paste, Back or Forward. */
export function onRouteChange(show: (route: Route) => void, signal: AbortSignal): void {
  const changed = () => show(parseRoute(location.hash))
  // Back/Forward fire popstate (and hashchange when the hash differs); links and pastes fire
  // hashchange. `show` is idempotent, so both arriving for one move is harmless.
  window.addEventListener('hashchange', changed, { signal })
  window.addEventListener('popstate', changed, { signal })
}
