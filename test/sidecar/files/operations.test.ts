/**
 * The file operations against a real filesystem: every error kind, page boundaries, versions,
 * traversal attempts and the check-then-open races (driven through the OpenHooks seams).
 */
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  symlinkSync,
  truncateSync,
  unlinkSync,
  writeFileSync,
} from 'node:fs'
import { execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { TermkeepError } from '../../../schema/errors.ts'
import { MAX_FILE_PAGE_BYTES, MAX_FILE_PAGE_LINES, MAX_SKIPPED_LINE_BYTES } from '../../../schema/limits.ts'
import { isInside, lexicalTarget, type Scope } from '../../../sidecar/files/confine.ts'
import { list, readAll, readBytes, readRelated, readFileText, stat } from '../../../sidecar/files/operations.ts'

let base: string
let root: string
let outside: string
let scope: Scope

async function failure(promise: Promise<unknown>): Promise<TermkeepError> {
  try {
    await promise
  } catch (error) {
    if (error instanceof TermkeepError) return error
    throw error
  }
  throw new Error('expected a TermkeepError')
}

const write = (rel: string, content: string | Uint8Array) => writeFileSync(join(root, rel), content)

beforeAll(() => {
  base = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-files-')))
  root = join(base, 'ws')
  outside = join(base, 'outside')
  mkdirSync(join(root, 'sub', 'deeper'), { recursive: true })
  mkdirSync(outside)
  writeFileSync(join(outside, 'secret.txt'), 'TOP SECRET\n')
  write('hello.txt', 'one\ntwo\nthree\n')
  write('sub/inner.txt', 'inner\n')
  write('sub/deeper/leaf.txt', 'leaf\n')
  scope = { root, allowOutside: false }
})
afterAll(() => rmSync(base, { recursive: true, force: true }))

describe('pure confinement', () => {
  it.each([
    ['/w', '/w', true],
    ['/w', '/w/a', true],
    ['/w', '/wx', false],
    ['/w', '/', false],
    ['/', '/anything', true],
  ])('isInside(%s, %s) = %s', (r, t, inside) => expect(isInside(r, t)).toBe(inside))

  it.each([
    ['a/../b', '/w/b'],
    ['../w/b', '/w/b'],
    ['../x', '/x'],
    ['/etc/passwd', '/etc/passwd'],
    ['%2e%2e/x', '/w/%2e%2e/x'],
    ['', '/w'],
  ])('lexicalTarget(/w, %j) = %s', (requested, target) => expect(lexicalTarget('/w', requested)).toBe(target))
})

describe('read (text pages)', () => {
  it('reads a page with version, size and canonical path', async () => {
    const page = await readFileText(scope, 'hello.txt', { offset: 2, limit: 1 })
    expect(page).toMatchObject({ text: 'two', lines: 1, offset: 2, eof: false, bytes: 14, absolutePath: join(root, 'hello.txt') })
    expect(typeof page.version).toBe('string')
    expect(await readFileText(scope, 'hello.txt', { offset: 3 })).toMatchObject({ text: 'three', eof: true })
    expect(await readFileText(scope, 'hello.txt', { offset: 4 })).toMatchObject({ text: '', lines: 0, eof: true })
  })

  it('handles exactly 5,000 lines, an empty file, no final newline and CRLF', async () => {
    const lines = Array.from({ length: MAX_FILE_PAGE_LINES }, (_, i) => `l${i + 1}`)
    write('5000.txt', `${lines.join('\n')}\n`)
    expect(await readFileText(scope, '5000.txt')).toMatchObject({ lines: MAX_FILE_PAGE_LINES, eof: true, text: lines.join('\n') })
    write('5001.txt', `${lines.join('\n')}\nlast`)
    expect(await readFileText(scope, '5001.txt')).toMatchObject({ lines: MAX_FILE_PAGE_LINES, eof: false })
    expect(await readFileText(scope, '5001.txt', { offset: 5001 })).toMatchObject({ lines: 1, text: 'last', eof: true })
    write('empty.txt', '')
    expect(await readFileText(scope, 'empty.txt')).toMatchObject({ text: '', lines: 0, eof: true, bytes: 0 })
    write('crlf.txt', 'a\r\nb\r\nc')
    expect(await readFileText(scope, 'crlf.txt')).toMatchObject({ text: 'a\nb\nc', lines: 3, eof: true })
  })

  it('accepts a page of exactly 2 MiB and refuses a huge single line with too-large', async () => {
    write('2mib.txt', `${'x'.repeat(MAX_FILE_PAGE_BYTES)}\n`)
    const exact = await readFileText(scope, '2mib.txt')
    expect(exact.text.length).toBe(MAX_FILE_PAGE_BYTES)
    write('huge-line.txt', `short\n${'y'.repeat(MAX_FILE_PAGE_BYTES + 1)}\nafter\n`)
    const error = await failure(readFileText(scope, 'huge-line.txt'))
    expect(error.code).toBe('files/too-large')
    expect(error.details).toMatchObject({ limit: MAX_FILE_PAGE_BYTES, path: 'huge-line.txt' })
    expect(await readFileText(scope, 'huge-line.txt', { limit: 1 })).toMatchObject({ text: 'short', eof: false })
    expect(await readFileText(scope, 'huge-line.txt', { offset: 3 })).toMatchObject({ text: 'after', eof: true })
  })

  it('gives up on a line without an end after MAX_SKIPPED_LINE_BYTES, not at the end of the file', async () => {
    write('no-newline.bin', '')
    truncateSync(join(root, 'no-newline.bin'), 100 * 1024 ** 3) // 100 GiB of zeros, sparse
    try {
      const started = Date.now()
      const error = await failure(readFileText(scope, 'no-newline.bin', { offset: 2 }))
      expect(Date.now() - started).toBeLessThan(5_000)
      expect(error.code).toBe('files/too-large')
      expect(error.details).toEqual({ limit: MAX_SKIPPED_LINE_BYTES, line: 1, byte: 0, path: 'no-newline.bin' })
      expect(error.message).toMatch(/files\/bytes/)
    } finally {
      unlinkSync(join(root, 'no-newline.bin'))
    }
    // Lines of several MB are still skipped on the way to a later one.
    write('long-lines.txt', `${'x'.repeat(5 * 1024 * 1024)}\n${'y'.repeat(3 * 1024 * 1024)}\nwanted\n`)
    expect(await readFileText(scope, 'long-lines.txt', { offset: 3 })).toMatchObject({ text: 'wanted', eof: true })
    // The bound holds exactly, also when resuming from a remembered line start.
    write('bounded.txt', `a\n${'b'.repeat(1000)}\nc\n${'d'.repeat(1001)}\ne\n`)
    expect(await readFileText(scope, 'bounded.txt', { offset: 3, limit: 1 }, undefined, 1000)).toMatchObject({ text: 'c', eof: false })
    expect((await failure(readFileText(scope, 'bounded.txt', { offset: 5 }, undefined, 1000))).details).toMatchObject({
      limit: 1000,
      line: 4,
      byte: 1005,
    })
    expect((await failure(readFileText(scope, 'bounded.txt', { offset: 3 }, undefined, 999))).details).toMatchObject({
      limit: 999,
      line: 2,
      byte: 2,
    })
  })

  it('refuses NUL and invalid UTF-8 as not-text', async () => {
    write('nul.txt', 'a\0b\n')
    write('latin1.txt', Uint8Array.of(0x63, 0x61, 0x66, 0xe9, 0x0a))
    expect((await failure(readFileText(scope, 'nul.txt'))).code).toBe('files/not-text')
    expect((await failure(readFileText(scope, 'latin1.txt'))).code).toBe('files/not-text')
  })

  it('answers missing and non-regular entries with their typed errors', async () => {
    expect(await failure(readFileText(scope, 'missing.txt'))).toMatchObject({ code: 'files/not-found', details: { path: 'missing.txt' } })
    expect(await failure(readFileText(scope, 'sub'))).toMatchObject({ code: 'files/not-regular-file', details: { kind: 'directory' } })
    execFileSync('mkfifo', [join(root, 'fifo')])
    expect(await failure(readFileText(scope, 'fifo'))).toMatchObject({ code: 'files/not-regular-file', details: { kind: 'other' } })
    expect((await failure(readFileText(scope, 'hello.txt/x'))).code).toBe('files/not-found')
  })

  it('pages on from remembered line starts, and never from a stale one after a rewrite', async () => {
    const make = (n: number, width: (i: number) => number) =>
      Array.from({ length: n }, (_, i) => `${i + 1}:${'z'.repeat(width(i))}`).join('\n')
    write(
      'paged.txt',
      make(40, (i) => i % 7),
    )
    const pages: string[] = []
    for (let offset = 1; offset <= 40; offset += 10) pages.push((await readFileText(scope, 'paged.txt', { offset, limit: 10 })).text)
    expect(pages.join('\n')).toBe(make(40, (i) => i % 7))
    write(
      'paged.txt',
      make(40, (i) => (i * 13) % 5),
    ) // new lengths: old positions would land mid-line
    expect((await readFileText(scope, 'paged.txt', { offset: 11, limit: 1 })).text).toBe(`11:${'z'.repeat((10 * 13) % 5)}`)
    expect((await readFileText(scope, 'paged.txt', { offset: 21, limit: 20 })).text).toBe(
      make(40, (i) => (i * 13) % 5)
        .split('\n')
        .slice(20)
        .join('\n'),
    )
  })

  it('changes the version when the file is written', async () => {
    write('versioned.txt', 'v1\n')
    const first = await readFileText(scope, 'versioned.txt')
    expect((await readFileText(scope, 'versioned.txt')).version).toBe(first.version)
    appendFileSync(join(root, 'versioned.txt'), 'v2\n')
    const second = await readFileText(scope, 'versioned.txt')
    expect(second.version).not.toBe(first.version)
    // The version is (device, inode, size, mtime, ctime): a same-size rewrite differs only in its
    // timestamps, which older kernels advance once per clock tick (1–4 ms), so let one pass.
    await new Promise((resolve) => setTimeout(resolve, 20))
    write('versioned.txt', 'v3\nv3\n') // same size as before the append, new content
    expect((await readFileText(scope, 'versioned.txt')).version).not.toBe(second.version)
  })
})

describe('confinement', () => {
  it('refuses .. and absolute paths that leave the workspace, allows them inside', async () => {
    expect((await failure(readFileText(scope, '../outside/secret.txt'))).code).toBe('files/outside-workspace')
    expect((await failure(readFileText(scope, 'sub/../../outside/secret.txt'))).code).toBe('files/outside-workspace')
    expect((await failure(readFileText(scope, join(outside, 'secret.txt')))).code).toBe('files/outside-workspace')
    expect((await failure(readFileText(scope, '/etc/passwd'))).code).toBe('files/outside-workspace')
    // Missing outside paths are outside too: nothing is learned about what exists there.
    expect((await failure(readFileText(scope, '../outside/nope.txt'))).code).toBe('files/outside-workspace')
    expect((await readFileText(scope, join(root, 'sub/inner.txt'))).text).toBe('inner')
    expect((await readFileText(scope, 'sub/deeper/../../hello.txt')).text).toBe('one\ntwo\nthree')
    expect((await readFileText(scope, '../ws/hello.txt')).text).toBe('one\ntwo\nthree')
  })

  it('treats URL-encoded traversal as a literal name', async () => {
    expect((await failure(readFileText(scope, '%2e%2e/outside/secret.txt'))).code).toBe('files/not-found')
    mkdirSync(join(root, '%2e%2e'))
    write('%2e%2e/literal.txt', 'literal\n')
    expect((await readFileText(scope, '%2e%2e/literal.txt')).text).toBe('literal')
  })

  it('follows symlinks that stay inside, refuses any link or chain that leaves', async () => {
    symlinkSync('hello.txt', join(root, 'link-in'))
    symlinkSync('link-in', join(root, 'chain-in'))
    symlinkSync(join(outside, 'secret.txt'), join(root, 'link-out'))
    symlinkSync('link-out', join(root, 'chain-out'))
    symlinkSync(outside, join(root, 'dir-out'))
    symlinkSync('nowhere', join(root, 'dangling'))
    symlinkSync('loop-b', join(root, 'loop-a'))
    symlinkSync('loop-a', join(root, 'loop-b'))
    const inside = await readFileText(scope, 'chain-in')
    expect(inside).toMatchObject({ text: 'one\ntwo\nthree', absolutePath: join(root, 'hello.txt') })
    for (const path of ['link-out', 'chain-out', 'dir-out/secret.txt', 'dir-out/missing']) {
      expect((await failure(readFileText(scope, path))).code, path).toBe('files/outside-workspace')
    }
    expect((await failure(list(scope, 'dir-out'))).code).toBe('files/outside-workspace')
    expect((await failure(readFileText(scope, 'dangling'))).code).toBe('files/not-found')
    expect(await failure(readFileText(scope, 'loop-a'))).toMatchObject({ code: 'files/not-found', details: { reason: 'symlink-loop' } })
  })

  it('allows reads outside only when the deployment says so', async () => {
    const open: Scope = { root, allowOutside: true }
    expect((await readFileText(open, '../outside/secret.txt')).text).toBe('TOP SECRET')
    expect((await readFileText(open, 'link-out')).text).toBe('TOP SECRET')
  })

  it('defeats a file swapped for an outside symlink between check and open', async () => {
    write('swap.txt', 'innocent\n')
    let swapped = false
    const error = await failure(
      readFileText(
        scope,
        'swap.txt',
        {},
        {
          beforeOpen(path) {
            if (swapped) return
            swapped = true
            unlinkSync(path)
            symlinkSync(join(outside, 'secret.txt'), path)
          },
        },
      ),
    )
    expect(swapped).toBe(true)
    expect(error.code).toBe('files/outside-workspace')
  })

  it('defeats a directory component swapped for an outside symlink after resolution', async () => {
    mkdirSync(join(outside, 'd'))
    writeFileSync(join(outside, 'd', 'file.txt'), 'OUTSIDE\n')
    mkdirSync(join(root, 'd'))
    write('d/file.txt', 'inside\n')
    for (const hook of ['afterResolve', 'beforeOpen'] as const) {
      rmSync(join(root, 'd'), { recursive: true, force: true })
      mkdirSync(join(root, 'd'))
      write('d/file.txt', 'inside\n')
      let swapped = false
      const swap = () => {
        if (swapped) return
        swapped = true
        renameSync(join(root, 'd'), join(base, `parked-${hook}`))
        symlinkSync(join(outside, 'd'), join(root, 'd'))
      }
      const error = await failure(readFileText(scope, 'd/file.txt', {}, { [hook]: swap }))
      expect(swapped).toBe(true)
      expect(error.code, hook).toBe('files/outside-workspace')
    }
  })
})

describe('a directory on the path replaced by a file while it is opened', () => {
  it('answers files/not-found, not a raw ENOTDIR', async () => {
    mkdirSync(join(root, 'gone'))
    write('gone/file.txt', 'inside\n')
    let swapped = false
    const error = await failure(
      readFileText(
        scope,
        'gone/file.txt',
        {},
        {
          afterResolve() {
            if (swapped) return
            swapped = true
            rmSync(join(root, 'gone'), { recursive: true, force: true })
            writeFileSync(join(root, 'gone'), 'now a file\n')
          },
        },
      ),
    )
    expect(swapped).toBe(true)
    expect(error.code).toBe('files/not-found')
  })
})

describe('a file that keeps changing identity while it is opened', () => {
  it('gives up after a few attempts instead of reading a file it did not check', async () => {
    write('flapping.txt', 'v0\n')
    let swaps = 0
    const error = await failure(
      readFileText(
        scope,
        'flapping.txt',
        {},
        {
          beforeOpen(path) {
            // A new inode at the same name every time: the checked entry is never the opened one.
            swaps++
            writeFileSync(`${path}.new`, `v${swaps}\n`)
            renameSync(`${path}.new`, path)
          },
        },
      ),
    )
    expect(swaps).toBe(3)
    expect(error).toMatchObject({ code: 'files/not-found', details: { reason: 'changed-while-opening' } })
    expect((await readFileText(scope, 'flapping.txt')).text).toBe('v3')
  })
})

describe('readBytes, readAll, readRelated', () => {
  it('reads a base64 window with eof', async () => {
    write('bin.dat', Uint8Array.of(0, 1, 2, 3, 255))
    expect(await readBytes(scope, 'bin.dat', { offset: 1, length: 2 })).toMatchObject({ data: 'AQI=', eof: false, offset: 1, bytes: 5 })
    expect(await readBytes(scope, 'bin.dat', { offset: 3 })).toMatchObject({ data: 'A/8=', eof: true })
    expect(await readBytes(scope, 'bin.dat', { offset: 9 })).toMatchObject({ data: '', eof: true })
    write('window.dat', new Uint8Array(MAX_FILE_PAGE_BYTES + 3))
    const window = await readBytes(scope, 'window.dat')
    expect(Buffer.from(window.data, 'base64').length).toBe(MAX_FILE_PAGE_BYTES)
    expect(window.eof).toBe(false)
  })

  it('reads a whole file under the cap and refuses one over it', async () => {
    write('all.dat', 'abcdef')
    expect(await readAll(scope, 'all.dat')).toMatchObject({
      data: Buffer.from('abcdef').toString('base64'),
      eof: true,
      offset: 0,
      bytes: 6,
    })
    expect(await failure(readAll(scope, 'all.dat', undefined, 5))).toMatchObject({ code: 'files/too-large', details: { limit: 5 } })
    expect((await readAll(scope, 'all.dat', undefined, 6)).bytes).toBe(6)
  })

  it('refuses a file that grows past the cap while it is read', async () => {
    write('grow.dat', 'x'.repeat(1000))
    expect((await readAll(scope, 'grow.dat', undefined, 1000)).bytes).toBe(1000)
    let grown = false
    const error = await failure(
      readAll(
        scope,
        'grow.dat',
        {
          // After the descriptor's fstat (size 1000, within the cap) and before the first read.
          afterOpen() {
            grown = true
            appendFileSync(join(root, 'grow.dat'), 'y'.repeat(10))
          },
        },
        1000,
      ),
    )
    expect(grown).toBe(true)
    expect(error).toMatchObject({ code: 'files/too-large', details: { limit: 1000 } })
  })

  it('resolves a related path from the base file directory, refusing bad relative paths', async () => {
    write('sub/map.json', '{"ok":true}')
    const related = await readRelated(scope, 'sub/inner.txt', 'map.json')
    expect(Buffer.from(related.data, 'base64').toString()).toBe('{"ok":true}')
    expect((await readRelated(scope, 'sub/deeper/leaf.txt', '../inner.txt')).absolutePath).toBe(join(root, 'sub/inner.txt'))
    expect((await failure(readRelated(scope, 'sub/inner.txt', '../../outside/secret.txt'))).code).toBe('files/outside-workspace')
    for (const [relative, reason] of [
      ['', 'empty'],
      ['/etc/passwd', 'absolute'],
      ['https://x/y', 'url'],
      ['file:map.json', 'url'],
      ['a\0b', 'nul'],
    ]) {
      expect(await failure(readRelated(scope, 'sub/inner.txt', relative))).toMatchObject({ code: 'files/bad-request', details: { reason } })
    }
    expect((await failure(readRelated(scope, 'nope.txt', 'map.json'))).code).toBe('files/not-found')
  })
})

describe('stat and list', () => {
  it('stats files and directories; missing is not-found', async () => {
    expect(await stat(scope, 'hello.txt')).toMatchObject({ kind: 'file', bytes: 14, absolutePath: join(root, 'hello.txt') })
    expect(await stat(scope, 'sub')).toMatchObject({ kind: 'directory', absolutePath: join(root, 'sub') })
    expect(await stat(scope, '')).toMatchObject({ kind: 'directory', absolutePath: root })
    expect((await failure(stat(scope, 'nope'))).code).toBe('files/not-found')
    expect((await failure(stat(scope, '../outside'))).code).toBe('files/outside-workspace')
  })

  it('lists direct children in stable name order with kinds and sizes', async () => {
    const listing = await list(scope, 'sub')
    expect(listing).toEqual({
      path: 'sub',
      absolutePath: join(root, 'sub'),
      truncated: false,
      entries: [
        { name: 'deeper', kind: 'directory' },
        { name: 'inner.txt', kind: 'file', size: 6 },
        { name: 'map.json', kind: 'file', size: 11 },
      ],
    })
    const top = await list(scope, '')
    expect(top.path).toBe('')
    const names = top.entries.map((e) => e.name)
    expect(names).toEqual([...names].sort((a, b) => (a < b ? -1 : 1)))
    expect(top.entries.find((e) => e.name === 'link-in')?.kind).toBe('symlink')
  })

  it('caps a listing with truncated and refuses a file with not-directory', async () => {
    mkdirSync(join(root, 'many'))
    for (let i = 0; i < 30; i++) writeFileSync(join(root, 'many', `f${String(i).padStart(2, '0')}`), '')
    const capped = await list(scope, 'many', undefined, 25)
    expect(capped.truncated).toBe(true)
    expect(capped.entries.map((e) => e.name)).toEqual(Array.from({ length: 25 }, (_, i) => `f${String(i).padStart(2, '0')}`))
    expect((await list(scope, 'many', undefined, 30)).truncated).toBe(false)
    expect(await failure(list(scope, 'hello.txt'))).toMatchObject({ code: 'files/not-directory', details: { kind: 'file' } })
  })
})

describe('edge cases a client can send', () => {
  it('answers a name longer than the file system allows with files/not-found, never a 500', async () => {
    const long = 'a'.repeat(300)
    // One at a time: started together, one could reject while another is awaited (unhandled).
    const operations = [
      () => readFileText(scope, long),
      () => stat(scope, long),
      () => list(scope, long),
      () => readFileText(scope, `sub/${long}/x.txt`),
    ]
    for (const operation of operations) {
      const error = await failure(operation())
      expect([error.code, error.details?.reason]).toEqual(['files/not-found', 'name-too-long'])
    }
  })

  it('stats a file that is removed and written again meanwhile as present or missing, never an error', async () => {
    const churn = join(root, 'churn.txt')
    let stop = false
    const writer = (async () => {
      while (!stop) {
        writeFileSync(churn, 'x')
        rmSync(churn, { force: true })
        await new Promise((r) => setImmediate(r))
      }
    })()
    const outcomes = new Set<string>()
    try {
      const deadline = Date.now() + 1_500
      while (Date.now() < deadline) {
        await Promise.all(
          Array.from({ length: 8 }, () =>
            stat(scope, 'churn.txt').then(
              () => outcomes.add('found'),
              (error: unknown) => outcomes.add(error instanceof TermkeepError ? error.code : `raw ${(error as Error).message}`),
            ),
          ),
        )
      }
    } finally {
      stop = true
      await writer
    }
    expect([...outcomes].filter((o) => o !== 'found' && o !== 'files/not-found')).toEqual([])
  })

  it('stops scanning a big file for a far text page once the caller is gone', async () => {
    const big = join(root, 'sparse.bin')
    execFileSync('truncate', ['-s', '4G', big])
    try {
      const abort = new AbortController()
      setTimeout(() => abort.abort(), 100)
      const started = Date.now()
      // Without the skipped-line bound, which would otherwise answer first.
      await expect(readFileText(scope, 'sparse.bin', { offset: 2 }, { signal: abort.signal }, Infinity)).rejects.toThrow(/abort/i)
      // Scanning 4 GB of zeros for line 2 takes many seconds; the abort ends it within a chunk.
      expect(Date.now() - started).toBeLessThan(3_000)
    } finally {
      rmSync(big, { force: true })
    }
  })
})
