/** Searching a real journal (a spool in a temp directory): pages by `limit` lose no match and repeat none. */
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, expect, test } from 'vitest'
import { Journal } from '../journal/journal.ts'
import { compileSearch, searchJournal } from './search.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-search-'))
afterAll(() => rmSync(dir, { recursive: true, force: true }))

function journalOf(...reads: string[]): Journal {
  const journal = new Journal(join(dir, `j${reads.length}-${Math.random()}`, 'spool'), { cols: 80, rows: 24 })
  for (const read of reads) {
    journal.appendData(Buffer.from(read))
    journal.flush()
  }
  return journal
}

/** Every match, page by page from `after` = 0, and how many pages it took. */
async function allPages(journal: Journal, pattern: string, limit: number) {
  const lines: string[] = []
  let pages = 0
  for (let after = 0; ; pages++) {
    const page = await searchJournal(journal, compileSearch(pattern), after, limit)
    expect(page.matches.length).toBeGreaterThan(0)
    lines.push(...page.matches.map((m) => m.line))
    if (page.complete) return { lines, pages: pages + 1 }
    expect(page.next).toBeGreaterThanOrEqual(after)
    after = page.next
  }
}

test('a page that fills up inside a read stops before it: the next page has the rest', async () => {
  const journal = journalOf('beta 1\r\nbeta 2\r\n', 'beta 3\r\nalpha\r\nbeta 4\r\n')
  const first = await searchJournal(journal, compileSearch('^beta'), 0, 3)
  expect(first.matches.map((m) => m.line)).toEqual(['beta 1', 'beta 2'])
  expect(first.complete).toBe(false)
  expect((await allPages(journal, '^beta', 3)).lines).toEqual(['beta 1', 'beta 2', 'beta 3', 'beta 4'])
  expect((await allPages(journal, '^beta', 1)).lines).toEqual(['beta 1', 'beta 2', 'beta 3', 'beta 4'])
})

test('one read holding more matches than the limit is answered whole (a cursor cannot point inside it)', async () => {
  const journal = journalOf('a1\na2\na3\n', 'a4\n')
  const first = await searchJournal(journal, compileSearch('^a'), 0, 2)
  expect(first.matches.map((m) => m.line)).toEqual(['a1', 'a2', 'a3'])
  expect(first.complete).toBe(false)
  expect(await allPages(journal, '^a', 2)).toEqual({ lines: ['a1', 'a2', 'a3', 'a4'], pages: 2 })
})
