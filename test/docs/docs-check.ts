/**
 * Pure checks behind test/docs/api-doc.test.ts: reading the route table of docs/api.md, comparing
 * it with what /openapi.json documents, and finding relative links and heading anchors in Markdown.
 */
import { openApiPath } from '../api/route-table.ts'

export interface RouteDoc {
  method: string
  /** As a reader writes it: `/v1/sessions/:sid`. */
  path: string
  /** `x-termkeep-grant`, or "none" for a route that needs no token. */
  grant: string
}

export interface Mismatch {
  /** In /openapi.json, not in the table. */
  missing: RouteDoc[]
  /** In the table, not in /openapi.json. */
  extra: RouteDoc[]
  wrongGrant: Array<{ method: string; path: string; documented: string; served: string }>
}

const BEGIN = '<!-- route-table:begin'
const END = '<!-- route-table:end'
const METHODS = new Set(['GET', 'POST', 'PUT', 'PATCH', 'DELETE'])

/** The rows between the route-table markers: `| METHOD | \`path\` | grant | purpose |`. */
export function parseRouteTable(markdown: string): RouteDoc[] {
  const start = markdown.indexOf(BEGIN)
  const end = markdown.indexOf(END, start)
  if (start < 0 || end < 0) throw new Error(`docs/api.md has no table between "${BEGIN} …-->" and "${END} …-->"`)
  const rows: RouteDoc[] = []
  for (const line of markdown.slice(start, end).split('\n').slice(1)) {
    const cells = line
      .trim()
      .replace(/^\||\|$/g, '')
      .split('|')
      .map((cell) => cell.trim())
    if (cells.length < 3 || cells[0] === 'method' || /^-+$/.test(cells[0]!)) continue
    const [method, path, grant] = cells.map((cell) => cell.replace(/`/g, '')) as [string, string, string]
    if (!METHODS.has(method)) throw new Error(`docs/api.md route table: "${method}" is not an HTTP method (row: ${line.trim()})`)
    if (path.includes('{')) throw new Error(`docs/api.md route table: write path parameters as :sid, not {sid} (row: ${line.trim()})`)
    rows.push({ method, path, grant })
  }
  return rows
}

/** Every operation of an OpenAPI document with its grant, paths in the reader's `:sid` spelling. */
export function servedRoutes(document: { paths: Record<string, Record<string, { 'x-termkeep-grant'?: string }>> }): RouteDoc[] {
  return Object.entries(document.paths).flatMap(([path, operations]) =>
    Object.entries(operations).map(([method, operation]) => ({
      method: method.toUpperCase(),
      path: path.replace(/\{(\w+)\}/g, ':$1'),
      grant: operation['x-termkeep-grant'] ?? 'none',
    })),
  )
}

const key = (route: { method: string; path: string }) => `${route.method} ${openApiPath(route.path)}`

export function compareRoutes(documented: readonly RouteDoc[], served: readonly RouteDoc[]): Mismatch {
  const doc = new Map(documented.map((r) => [key(r), r]))
  const api = new Map(served.map((r) => [key(r), r]))
  const mismatch: Mismatch = { missing: [], extra: [], wrongGrant: [] }
  for (const [k, route] of api) {
    const row = doc.get(k)
    if (!row) mismatch.missing.push(route)
    else if (row.grant !== route.grant)
      mismatch.wrongGrant.push({ method: route.method, path: route.path, documented: row.grant, served: route.grant })
  }
  for (const [k, row] of doc) if (!api.has(k)) mismatch.extra.push(row)
  return mismatch
}

const cell = (grant: string) =>
  grant === 'none' || grant === 'any valid token' ? grant : grant.replace(/[\w-]+:[\w-]+|\badmin\b/g, '`$&`')

/** What a developer reads when the table and /openapi.json disagree: which rows to add, fix, remove. */
export function describeMismatch({ missing, extra, wrongGrant }: Mismatch): string {
  const parts: string[] = []
  if (missing.length > 0) {
    parts.push(
      `docs/api.md's route table (between the route-table markers) lacks ${missing.length} route(s) that /openapi.json documents; add a row for each:\n` +
        missing.map((r) => `  | ${r.method} | \`${r.path}\` | ${cell(r.grant)} | <one-line purpose> |`).join('\n'),
    )
  }
  if (wrongGrant.length > 0) {
    parts.push(
      `docs/api.md names another grant than /openapi.json's x-termkeep-grant; correct these rows:\n` +
        wrongGrant.map((r) => `  ${r.method} ${r.path}: the table says "${r.documented}", the route requires "${r.served}"`).join('\n'),
    )
  }
  if (extra.length > 0) {
    parts.push(
      `docs/api.md lists route(s) that /openapi.json does not document; remove the rows or fix their method/path:\n` +
        extra.map((r) => `  ${r.method} ${r.path}`).join('\n'),
    )
  }
  return parts.join('\n\n')
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const line of markdown.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced
    const heading = fenced ? undefined : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)?.[1]
    if (heading === undefined) continue
    const slug = heading
      .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const n = seen.get(slug) ?? 0
    seen.set(slug, n + 1)
    anchors.add(n === 0 ? slug : `${slug}-${n}`)
  }
  return anchors
}

/** Relative Markdown links outside code: `[text](target#anchor)`; target '' is the same file. */
export function relativeLinks(markdown: string): Array<{ target: string; anchor: string | undefined }> {
  const prose = markdown.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '')
  const links: Array<{ target: string; anchor: string | undefined }> = []
  for (const [, href] of prose.matchAll(/\]\(([^)\s]+)\)/g)) {
    if (/^[a-z][\w+.-]*:/i.test(href!)) continue // https:, mailto:, …
    const [target, anchor] = href!.split('#') as [string, string | undefined]
    links.push({ target, anchor })
  }
  return links
}

/** docs/operations.md's start lines: the sh block between its start-lines markers, comments off. */
export function startLines(markdown: string): string[] {
  const begin = markdown.indexOf('<!-- start-lines:begin')
  const end = markdown.indexOf('<!-- start-lines:end', begin)
  if (begin < 0 || end < 0) throw new Error('docs/operations.md has no start-lines markers')
  const block = /```sh\n([\s\S]*?)```/.exec(markdown.slice(begin, end))?.[1] ?? ''
  return block
    .split('\n')
    .map((line) => line.replace(/\s+#.*$/, '').trim())
    .filter((line) => line !== '')
}

/** Pure: a shell line without its comment (a `#` after a blank, outside quotes). */
export function withoutComment(line: string): string {
  let quote: string | undefined
  for (let i = 0; i < line.length; i++) {
    const c = line[i]!
    if (quote) {
      if (c === quote) quote = undefined
    } else if (c === "'" || c === '"') quote = c
    else if (c === '#' && (i === 0 || /\s/.test(line[i - 1]!))) return line.slice(0, i).trimEnd()
  }
  return line.trimEnd()
}

/**
 * Pure: the command lines of a Markdown document's sh blocks, in order: continued lines (`\`)
 * joined, a here-document kept whole with its lines, comments and blank lines left out.
 */
export function commandLines(markdown: string): string[] {
  const lines: string[] = []
  for (const [, block] of markdown.matchAll(/```sh\n([\s\S]*?)```/g)) {
    const source = block!.split('\n')
    for (let i = 0; i < source.length; i++) {
      let line = withoutComment(source[i]!)
      while (line.endsWith('\\') && i + 1 < source.length) line = `${line.slice(0, -1).trimEnd()} ${withoutComment(source[++i]!).trim()}`
      const heredoc = /<<'(\w+)'/.exec(line)?.[1]
      if (heredoc) {
        const body: string[] = []
        while (i + 1 < source.length && source[i + 1] !== heredoc) body.push(source[++i]!)
        i++
        line = [line, ...body, heredoc].join('\n')
      }
      if (line.trim() !== '') lines.push(line.trim())
    }
  }
  return lines
}

/** The copy of `termkeep --help` between a document's help markers. */
export function helpBlock(markdown: string): string {
  const begin = markdown.indexOf('<!-- help:begin -->')
  const end = markdown.indexOf('<!-- help:end -->', begin)
  if (begin < 0 || end < 0) throw new Error('no help:begin / help:end markers')
  const block = /```text\n([\s\S]*?)```/.exec(markdown.slice(begin, end))?.[1]
  if (block === undefined) throw new Error('no ```text block between the help markers')
  return block
}
