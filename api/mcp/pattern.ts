/**
 * Patterns clients send to `wait`. JavaScript's RegExp backtracks: `(a+)+$` against forty `a`s
 * runs for minutes on the API's only thread, and no length bound prevents that. So patterns are
 * RE2 (re2js, a pure-JavaScript port of RE2: matching time is linear in the text, whatever the
 * pattern), at most MCP_PATTERN_MAX_CHARS long (schema/wire/mcp.ts), matched against at most
 * MCP_PATTERN_TEXT_MAX_CHARS of screen text (text.ts). RE2 has no lookaround or backreferences;
 * a pattern using them is a validation error, not a slow match.
 */
import { RE2JS } from 're2js'
import { TermkeepError } from '../../schema/errors.ts'

export type Pattern = RE2JS

/** Compiles a client's pattern; `^` and `$` match at line ends (a prompt is a line). */
export function compilePattern(source: string): Pattern {
  try {
    return RE2JS.compile(source, RE2JS.MULTILINE)
  } catch (error) {
    throw new TermkeepError(
      'request/invalid',
      `invalid arguments: pattern: ${(error as Error).message} (RE2 syntax: no lookaround or backreferences)`,
    )
  }
}

/** The first match in `text`, and the whole line it starts on. */
export function firstMatch(pattern: Pattern, text: string): { match: string; line: string } | undefined {
  const matcher = pattern.matcher(text)
  if (!matcher.find()) return undefined
  const start = matcher.start()
  const lineStart = text.lastIndexOf('\n', start - 1) + 1
  const lineEnd = text.indexOf('\n', start)
  return { match: matcher.group() ?? '', line: text.slice(lineStart, lineEnd === -1 ? text.length : lineEnd) }
}
