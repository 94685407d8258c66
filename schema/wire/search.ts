/**
 * Searching what terminals printed (docs/api.md): an RE2 pattern over the journal's output as
 * plain text lines, bounded in matches and in bytes read, answered as cursors and lines.
 *
 *   GET /v1/sessions/:sid/terminals/:tid/search?pattern=&after=&limit=   → SearchResult
 *   GET /v1/sessions/:sid/search?pattern=&limit=                         → SessionSearch (every live terminal)
 *
 * A match's `sequence` is the journal record its line ended in: `readOutput(after: sequence − 1)`
 * starts with the end of that line. `next` is the cursor to search on from (`after=next`) when
 * `complete` is false: the bound on bytes or matches stopped it there.
 */
import * as v from 'valibot'
import { MCP_PATTERN_MAX_CHARS, SEARCH_DEFAULT_MATCHES, SEARCH_MAX_MATCHES } from '../limits.ts'
import { pageLimit } from './common.ts'

export const SearchQuery = v.object({
  pattern: v.pipe(
    v.string(),
    v.minLength(1, 'pattern is empty'),
    v.maxLength(MCP_PATTERN_MAX_CHARS, `patterns are at most ${MCP_PATTERN_MAX_CHARS} characters`),
    v.description('RE2 (no lookaround or backreferences), matched against each line; (?i) for any case'),
  ),
  after: v.optional(v.pipe(v.string(), v.regex(/^\d{1,15}$/, 'after is a sequence')), '0'),
  limit: v.optional(pageLimit(SEARCH_MAX_MATCHES), String(SEARCH_DEFAULT_MATCHES)),
})
export type SearchQuery = v.InferOutput<typeof SearchQuery>

export const SearchMatch = v.object({ sequence: v.number(), line: v.string() })

export const SearchResult = v.object({
  matches: v.array(SearchMatch),
  /** The last sequence read: search on with `after=next`. */
  next: v.number(),
  /** Everything journaled so far was read. */
  complete: v.boolean(),
})
export type SearchResult = v.InferOutput<typeof SearchResult>

export const SessionSearch = v.object({
  terminals: v.array(v.object({ terminalId: v.string(), ...SearchResult.entries })),
})
export type SessionSearch = v.InferOutput<typeof SessionSearch>
