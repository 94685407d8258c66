/**
 * The API's SSE routes, derived from the routes themselves, never listed by hand: a GET whose
 * documented 200 answer is `text/event-stream` (openapi.ts `sse()`, which every stream route
 * declares in its describeRoute). EventSource tickets open exactly these (auth/tickets.ts), and
 * test/api/tickets.test.ts walks each one with a ticket, so a stream route mounted tomorrow takes
 * a ticket the day it is mounted, or that test names it.
 */
import type { Env, Hono } from 'hono'
import { uniqueSymbol } from 'hono-openapi'

export interface StreamRoutes {
  /** Route paths as mounted (`/v1/sessions/:sid/terminals/:tid/follow`), sorted. */
  readonly paths: readonly string[]
  /** Does a request path (no query) name one of them? */
  matches(path: string): boolean
}

interface Described {
  spec?: { responses?: Record<string, { content?: Record<string, unknown> }> }
}

function answersSse(handler: unknown): boolean {
  const described = (handler as { [uniqueSymbol]?: Described })[uniqueSymbol]
  return described?.spec?.responses?.['200']?.content?.['text/event-stream'] !== undefined
}

/** Pure: a mounted path as a pattern of request paths (a `:param` is one non-empty segment). */
export function routePattern(path: string): RegExp {
  const parts = path.split('/').map((part) => (part.startsWith(':') ? '[^/]+' : part.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')))
  return new RegExp(`^${parts.join('/')}$`)
}

export function streamRoutes<E extends Env>(app: Hono<E>): StreamRoutes {
  const paths = [
    ...new Set(app.routes.filter((route) => route.method === 'GET' && answersSse(route.handler)).map((route) => route.path)),
  ].sort()
  const patterns = paths.map(routePattern)
  return { paths, matches: (path) => patterns.some((pattern) => pattern.test(path)) }
}
