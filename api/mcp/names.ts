/**
 * Names wherever a tool takes an id (docs/mcp.md#names): a tool call's `sid` and `tid` may be a
 * session's or a terminal's name, resolved through `GET /v1/resolve` under the caller's token (the
 * same authority path as everything else) before the tool runs. A part that names nothing is left
 * as given, so a new terminal's `tid` still creates it and a missing one is the route's own 404; a
 * part that is the id of one and the name of another is refused (`name/ambiguous`).
 */
import { TermkeepError } from '../../schema/errors.ts'
import type { ResolvedTarget } from '../../schema/wire/names.ts'
import type { Dispatcher } from './dispatch.ts'

/** Could this be a name? Names start with a letter and have no `:` (schema/limits.ts NAME_PATTERN). */
const MAYBE_NAME = /^[A-Za-z][\w.-]{0,63}$/

async function resolved(call: Dispatcher, target: string): Promise<ResolvedTarget | undefined> {
  try {
    return await call.json<ResolvedTarget>('GET', '/v1/resolve', { query: { target } })
  } catch (error) {
    if (error instanceof TermkeepError && error.code === 'name/ambiguous') throw error
    return undefined // not found, not visible, or not this token's to resolve: the route answers
  }
}

/** The arguments with `sid` and `tid` as ids (one request when both resolve, the usual case). */
export async function resolveNames(
  call: Dispatcher,
  args: Record<string, unknown> | undefined,
): Promise<Record<string, unknown> | undefined> {
  const sid = typeof args?.sid === 'string' ? args.sid : undefined
  const tid = typeof args?.tid === 'string' && MAYBE_NAME.test(args.tid) ? args.tid : undefined
  if (!args || sid === undefined || (!MAYBE_NAME.test(sid) && tid === undefined)) return args
  const both = tid === undefined ? undefined : await resolved(call, `${sid}:${tid}`)
  if (both) return { ...args, sid: both.sessionId, tid: both.terminalId }
  const session = await resolved(call, sid)
  return session ? { ...args, sid: session.sessionId } : args
}
