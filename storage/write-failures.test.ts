/**
 * Failed writes as health sees them: out of space (SQLITE_FULL, ENOSPC, EDQUOT, wrapped as drizzle
 * wraps libSQL's error) or otherwise, until that writer succeeds or the window passes.
 */
import { describe, expect, it } from 'vitest'
import { WRITE_FAILURE_WINDOW_MS } from './tuning.ts'
import { describeError, isOutOfSpace, WriteFailures } from './write-failures.ts'

/** libSQL's error, wrapped as drizzle wraps it (a "Failed query" with its parameters). */
function libsql(code: string, message: string): Error {
  const inner = Object.assign(new Error(message), { code })
  const outer = Object.assign(new Error(`${code}: ${message}`, { cause: inner }), { code })
  return new Error(`Failed query: insert into display_chunks … params: ${'x'.repeat(5_000)}`, { cause: outer })
}
const enospc = () => Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' })

describe('WriteFailures', () => {
  it.each([
    [libsql('SQLITE_FULL', 'database or disk is full'), true],
    [enospc(), true],
    [Object.assign(new Error('EDQUOT: disk quota exceeded'), { code: 'EDQUOT' }), true],
    [libsql('SQLITE_BUSY', 'database is locked'), false],
    [libsql('SQLITE_IOERR', 'disk I/O error'), false],
  ])('tells out of space from other failures (%#)', (error, full) => {
    expect(isOutOfSpace(error)).toBe(full)
  })

  it('names the coded error in one short line, not the query and its parameters', () => {
    expect(describeError(libsql('SQLITE_FULL', 'database or disk is full'))).toBe('SQLITE_FULL: database or disk is full')
    expect(describeError(new Error('y'.repeat(1_000))).length).toBeLessThan(400)
  })

  it('counts a writer until it succeeds; a database write failing makes the database not writable, a journal file not', () => {
    const failures = new WriteFailures()
    const revisions = {}
    const journal = {}
    failures.failed(journal, "journaling a terminal's output", enospc())
    expect(failures.finding()).toMatchObject({ code: 'storage/disk-full', database: false })
    failures.failed(revisions, 'persisting the display of s/t', libsql('SQLITE_FULL', 'database or disk is full'))
    expect(failures.finding()).toMatchObject({
      code: 'storage/disk-full',
      database: true,
      detail: expect.stringContaining('2 writer(s) failing; the latest: persisting the display of s/t: SQLITE_FULL'),
    })
    failures.succeeded(revisions)
    expect(failures.finding()).toMatchObject({ code: 'storage/disk-full', database: false })
    failures.succeeded(journal)
    expect(failures.finding()).toBeUndefined()
  })

  it('says write-failed for another failure, and forgets a writer that gave up after the window', () => {
    let now = 0
    const failures = new WriteFailures(() => now)
    failures.failed({}, 'persisting terminal s/t', libsql('SQLITE_BUSY', 'database is locked'))
    expect(failures.finding()).toEqual({
      code: 'storage/write-failed',
      message: "termkeep's writes fail and are being retried: SQLITE_BUSY: database is locked",
      detail: '1 writer(s) failing; the latest: persisting terminal s/t: SQLITE_BUSY: database is locked',
      database: true,
    })
    now += WRITE_FAILURE_WINDOW_MS - 1
    expect(failures.finding()).toBeDefined()
    now += 1
    expect(failures.finding()).toBeUndefined()
  })
})
