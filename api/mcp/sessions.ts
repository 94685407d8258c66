/**
 * The tmux MCP servers' remaining tools, where they fit termkeep: finding sessions and terminals by
 * name, renaming them, closing a whole session, searching output (RE2, bounded, answered as
 * cursors and lines) and reading any range of the persisted scrollback. Each is one route.
 */
import * as v from 'valibot'
import { SessionId } from '../../schema/wire/common.ts'
import { FindQuery } from '../../schema/wire/names.ts'
import { RenameSession } from '../../schema/wire/registry.ts'
import type { Scrollback } from '../../schema/wire/scrollback.ts'
import { ScrollbackQuery } from '../../schema/wire/scrollback.ts'
import { SearchQuery } from '../../schema/wire/search.ts'
import { RenameTerminal, TerminalParams } from '../../schema/wire/terminals.ts'
import { routeTool, T, textResult, type Tool } from './tool.ts'

const SessionOnly = v.object({ sid: SessionId })
const READ = { readOnlyHint: true, openWorldHint: false }

export const SESSION_TOOLS: readonly Tool[] = [
  routeTool({
    name: 'find',
    title: 'Find sessions and terminals',
    description:
      'Sessions and terminals whose id, name or title holds `q` (any case), newest first. Any tool takes a name where it takes an id.',
    annotations: READ,
    method: 'GET',
    path: '/v1/find',
    query: FindQuery,
  }),
  routeTool({
    name: 'rename_terminal',
    title: 'Rename a terminal',
    description: 'A new `title`, a new `name` (what people type: `api:build`; null removes it), or both.',
    annotations: { idempotentHint: true, openWorldHint: false },
    method: 'PATCH',
    path: T,
    params: TerminalParams,
    body: RenameTerminal,
  }),
  routeTool({
    name: 'rename_session',
    title: 'Rename a session',
    description: 'A new `title`, a new `name` (what people type: `termkeep attach api`; null removes it), or both.',
    annotations: { idempotentHint: true, openWorldHint: false },
    method: 'PATCH',
    path: '/v1/sessions/:sid',
    params: SessionOnly,
    body: RenameSession,
  }),
  routeTool({
    name: 'close_session',
    title: 'Close a session',
    description: 'Close every live terminal of the session: their processes are ended (as tmux kill-session); answers their final infos.',
    annotations: { destructiveHint: true, idempotentHint: true, openWorldHint: false },
    method: 'DELETE',
    path: '/v1/sessions/:sid/terminals',
    params: SessionOnly,
  }),
  routeTool({
    name: 'search_output',
    title: "Search a terminal's output",
    description:
      'Lines of everything the terminal printed after cursor `after` that match an RE2 `pattern`, each with the sequence it ended in (read_output after sequence−1 shows it); ' +
      '`complete: false` with `next` to search on when a bound stopped it.',
    annotations: READ,
    method: 'GET',
    path: `${T}/search`,
    params: TerminalParams,
    query: SearchQuery,
  }),
  routeTool({
    name: 'search_session',
    title: "Search a session's output",
    description: 'The same search over every live terminal of the session, each from its first byte.',
    annotations: READ,
    method: 'GET',
    path: '/v1/sessions/:sid/search',
    params: SessionOnly,
    query: v.omit(SearchQuery, ['after']),
  }),
  routeTool({
    name: 'read_scrollback',
    title: 'Read the scrollback',
    description:
      "Any range of the terminal's persisted screen history as text, not only the last rows: row 0 is the oldest kept (10,000 rows at 80 columns), " +
      '`from` and `count` (≤ 2,000) select, and without `from` the last `count`. Works after the terminal ended.',
    annotations: READ,
    method: 'GET',
    path: `${T}/scrollback`,
    params: TerminalParams,
    query: ScrollbackQuery,
    present: (value) => {
      const { lines, ...facts } = value as Scrollback
      return textResult(lines.map((line) => line.text).join('\n'), facts)
    },
  }),
]
