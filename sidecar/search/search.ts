/**
 * Searching a journal (schema/wire/search.ts): its Data records decoded as UTF-8 (one streaming
 * decoder, so a character split across reads is whole), cut into lines at LF, each line made plain
 * (escape sequences removed, what a carriage return redrew kept, control characters dropped) and
 * matched with RE2, whose time is linear in the text whatever the pattern. A search reads at most
 * SEARCH_MAX_SCAN_BYTES and stops at `limit` matches; it says where it stopped.
 */
import { RE2JS } from 're2js'
import stripAnsi from 'strip-ansi'
import { TermkeepError } from '../../schema/errors.ts'
import { SEARCH_LINE_MAX_CHARS, SEARCH_MAX_SCAN_BYTES } from '../../schema/limits.ts'
import type { SearchResult } from '../../schema/wire/search.ts'
import type { Journal } from '../journal/journal.ts'

/** A line longer than this is searched in its first this many characters (a binary dump's "line"). */
const MAX_LINE_CHARS = 64 * 1024
const CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f]/g

export function compileSearch(source: string): RE2JS {
  try {
    return RE2JS.compile(source)
  } catch (error) {
    throw new TermkeepError('request/invalid', `invalid pattern: ${(error as Error).message} (RE2 syntax: no lookaround or backreferences)`)
  }
}

/** Pure: a line of output as the screen would leave it, as far as text goes. */
export function plainLine(raw: string): string {
  const parts = stripAnsi(raw)
    .split('\r')
    .filter((part) => part.length > 0)
  return (parts.at(-1) ?? '').replace(CONTROLS, '')
}

/** Pure: the line cut to SEARCH_LINE_MAX_CHARS around its match. */
function shown(line: string, at: number): string {
  if (line.length <= SEARCH_LINE_MAX_CHARS) return line
  const start = Math.max(0, Math.min(at - SEARCH_LINE_MAX_CHARS / 4, line.length - SEARCH_LINE_MAX_CHARS))
  return line.slice(start, start + SEARCH_LINE_MAX_CHARS)
}

/**
 * Pages end at a record's end: `next` is a sequence, so it cannot point inside one. A record whose
 * matches would take the page past `limit` is left whole to the next page, unless it is the page's
 * first with any (a page always moves on): then it is answered whole, past `limit`.
 */
export async function searchJournal(journal: Journal, pattern: RE2JS, after: number, limit: number): Promise<SearchResult> {
  const release = journal.attach()
  const matches: SearchResult['matches'] = []
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true })
  let partial = ''
  let cursor = after
  let read = 0
  const test = (raw: string, sequence: number, into: SearchResult['matches']) => {
    const line = plainLine(raw.length > MAX_LINE_CHARS ? raw.slice(0, MAX_LINE_CHARS) : raw)
    const matcher = pattern.matcher(line)
    if (matcher.find()) into.push({ sequence, line: shown(line, matcher.start()) })
  }
  try {
    const end = journal.lastSequence
    scan: while (cursor < end && read < SEARCH_MAX_SCAN_BYTES && matches.length < limit) {
      const records = await journal.readRecords(cursor)
      if (records.length === 0) break
      for (const record of records) {
        if (record.sequence > end || matches.length >= limit) break
        if (record.kind !== 'data') {
          cursor = record.sequence
          continue
        }
        const lines = (partial + decoder.decode(record.bytes, { stream: true })).split('\n')
        const rest = lines.pop()!
        const found: SearchResult['matches'] = []
        for (const line of lines) test(line, record.sequence, found)
        if (matches.length > 0 && matches.length + found.length > limit) break scan
        matches.push(...found)
        partial = rest.length > MAX_LINE_CHARS ? rest.slice(0, MAX_LINE_CHARS) : rest
        read += record.bytes.length
        cursor = record.sequence
      }
    }
    const complete = cursor >= end
    // The line being written (a prompt, a progress bar) counts too once everything was read.
    if (complete && partial !== '' && matches.length < limit) test(partial, cursor, matches)
    return { matches, next: cursor, complete }
  } finally {
    release()
  }
}
