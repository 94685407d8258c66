/**
 * docs/architecture.md stays true to the tree: its folder table names every top-level folder, and
 * every file or folder it names — in the table relative to the row's folder, elsewhere from the
 * root — exists.
 */
import { execFileSync } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { dirname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { ERROR_STATUS } from '../../schema/errors.ts'

const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), '../..'))
const DOC = readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8')

/** A backticked name that reads as a file or folder: a path, or a name with a file extension. */
const PATHLIKE = /^[\w.@+-]+((\/[\w.@+-]+)+\/?|\/|\.(ts|js|mjs|json|jsonc|sql|patch|md|toml|html|css))$/

function spans(text: string): string[] {
  return [...text.matchAll(/`([^`\n]+)`/g)].map((m) => m[1]!).filter((span) => PATHLIKE.test(span))
}

/** The rows of the "Where each concern lives" table: folder → what its cell names. */
function folderTable(): Map<string, string[]> {
  const start = DOC.indexOf('## Where each concern lives')
  const end = DOC.indexOf('\n## ', start + 1)
  const rows = new Map<string, string[]>()
  for (const line of DOC.slice(start, end).split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim())
    const folder = /^`([^`]+\/)`$/.exec(cells[1] ?? '')?.[1]
    if (folder) rows.set(folder, spans(cells[2] ?? ''))
  }
  return rows
}

const trackedTopLevel = () =>
  [
    ...new Set(
      execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' })
        .split('\n')
        .filter((f) => f.includes('/'))
        .map((f) => `${f.split('/')[0]}/`),
    ),
  ].sort()

describe('docs/architecture.md', () => {
  it('names every top-level folder in its folder table, and no other', () => {
    expect([...folderTable().keys()].sort()).toEqual(trackedTopLevel())
  })

  it("names only files and folders that exist, in the table under the row's folder", () => {
    const tracked = execFileSync('git', ['ls-files'], { cwd: ROOT, encoding: 'utf8' }).split('\n')
    // A name in a row is its folder's, or a sub-folder's it names just before (`display/`: `decode.ts`).
    const under = (folder: string, name: string) => tracked.some((file) => file.startsWith(folder) && `/${file}`.includes(`/${name}`))
    const missing: string[] = []
    for (const [folder, names] of folderTable()) {
      for (const name of names) if (!under(folder, name) && !existsSync(join(ROOT, name))) missing.push(`${folder} row: ${name}`)
    }
    expect(missing).toEqual([])
  })

  it('names only files and folders that exist elsewhere on the page', () => {
    const tops = new Set([...trackedTopLevel().map((f) => f.slice(0, -1)), ...readFileSync(join(ROOT, '.gitignore'), 'utf8').split('\n')])
    const start = DOC.indexOf('## Where each concern lives')
    const rest = DOC.slice(0, start) + DOC.slice(DOC.indexOf('\n## ', start + 1))
    // An error code (`sidecar/unavailable`) reads like a path too.
    const named = spans(rest).filter((span) => span.includes('/') && tops.has(span.split('/')[0]!) && !Object.hasOwn(ERROR_STATUS, span))
    expect(named.length).toBeGreaterThan(10)
    expect(named.filter((span) => !existsSync(join(ROOT, span)))).toEqual([])
  })
})
