/**
 * Names people type (docs/api.md#names) and finding things by them.
 *
 *   GET   /v1/resolve?target=session[:terminal]   → ResolvedTarget
 *   GET   /v1/find?q=TEXT                        → FoundNames
 *   PATCH /v1/sessions/:sid   RenameSession      → {session}   (schema/wire/registry.ts)
 */
import * as v from 'valibot'
import { MAX_NAME_CHARS, MAX_TITLE_CHARS } from '../limits.ts'
import { TERMINAL_STATES } from './terminals.ts'

/** One part of a target: an id or a name (ids are the wider pattern). */
const Part = v.pipe(v.string(), v.regex(/^[\w.-]{1,128}$/))

export const ResolveQuery = v.object({
  target: v.pipe(
    v.string(),
    v.check((target) => {
      const [session, terminal, ...rest] = target.split(':')
      return rest.length === 0 && v.is(Part, session) && (terminal === undefined || terminal === '' || v.is(Part, terminal))
    }, 'target is session[:terminal], each an id or a name'),
  ),
})

export const ResolvedTarget = v.object({
  sessionId: v.string(),
  sessionName: v.nullable(v.string()),
  /** Null when the target named a session only and it has no live terminal. */
  terminalId: v.nullable(v.string()),
  terminalName: v.nullable(v.string()),
})
export type ResolvedTarget = v.InferOutput<typeof ResolvedTarget>

export const FindQuery = v.object({
  q: v.pipe(v.string(), v.minLength(1, 'q is empty'), v.maxLength(Math.max(MAX_NAME_CHARS, MAX_TITLE_CHARS), 'q is too long')),
})

export const FoundNames = v.object({
  sessions: v.array(v.object({ id: v.string(), name: v.nullable(v.string()), title: v.nullable(v.string()), cwd: v.string() })),
  terminals: v.array(
    v.object({
      sessionId: v.string(),
      id: v.string(),
      name: v.nullable(v.string()),
      title: v.string(),
      state: v.picklist(TERMINAL_STATES),
    }),
  ),
})
export type FoundNames = v.InferOutput<typeof FoundNames>
