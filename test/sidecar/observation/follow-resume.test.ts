/**
 * Resuming a follow from a cursor (cursor.ts, FileFollower.resume) on real files: a reader that
 * disconnects again and again while another process writes as fast as it can gets every byte
 * exactly once, in order; a file cut or rewritten while the reader was away answers `truncate`,
 * one rotated or replaced answers `replace` (also when the path was missing at the reconnect),
 * and a cursor after a `replace` continues in the new file. Cursors are bound to their handle and
 * cannot be altered.
 */
import { spawn } from 'node:child_process'
import { appendFileSync, mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { FollowCursors } from '../../../sidecar/observation/cursor.ts'
import { FileFollower, type FollowChunk, type FollowTarget } from '../../../sidecar/observation/follow.ts'
import { objectOf } from '../../../sidecar/observation/handles.ts'

const root = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-resume-')))
afterAll(() => rmSync(root, { recursive: true, force: true }))

const cursors = new FollowCursors('a-test-secret-of-enough-length')
const HANDLE = 'h1.f.the-handle-of-this-test'

let n = 0
function fresh(content: string): { path: string; target: FollowTarget } {
  const dir = join(root, `case-${++n}`)
  mkdirSync(dir)
  const path = join(dir, 'journal.jsonl')
  writeFileSync(path, content)
  return { path, target: { root, path, ...objectOf(statSync(path, { bigint: true })) } }
}

/** What a reader keeps between connections: its copy of the content and its last cursor. */
interface Reader {
  target: FollowTarget
  copy: Buffer
  cursor?: string
}

/**
 * One connection: from the reader's cursor (the start without one), applying every chunk to its
 * copy, until `enough(copy, chunks)`; then it disconnects. Answers this connection's chunks.
 */
async function connect(
  reader: Reader,
  enough: (copy: Buffer, chunks: FollowChunk[]) => boolean,
  maxChunkBytes?: number,
): Promise<FollowChunk[]> {
  const follower = reader.cursor
    ? await FileFollower.resume(reader.target, cursors.open(HANDLE, reader.cursor), maxChunkBytes)
    : await FileFollower.open(reader.target, maxChunkBytes)
  const abort = new AbortController()
  let timedOut = false
  const timer = setTimeout(() => ((timedOut = true), abort.abort()), 20_000)
  const chunks: FollowChunk[] = []
  try {
    for await (const chunk of follower.chunks(abort.signal)) {
      if (chunk === null) continue
      chunks.push(chunk)
      if (chunk.type === 'append') {
        expect(chunk.offset, 'an append continues exactly where the copy ends').toBe(reader.copy.length)
        reader.copy = Buffer.concat([reader.copy, chunk.bytes])
      } else {
        expect(chunk.offset).toBe(0)
        reader.copy = Buffer.from(chunk.bytes)
      }
      reader.cursor = cursors.mint(HANDLE, chunk.file, chunk.offset + chunk.bytes.length, chunk.tail)
      if (enough(reader.copy, chunks)) break
    }
  } finally {
    clearTimeout(timer)
    abort.abort()
  }
  expect(timedOut, `the connection timed out after ${JSON.stringify(shown(chunks))}`).toBe(false)
  return chunks
}

const shown = (chunks: FollowChunk[]) => chunks.map((c) => [c.type, c.bytes.toString()])
const has = (text: string) => (copy: Buffer) => copy.toString() === text

describe('a follow resumed from its cursor', () => {
  it('gives a reader that keeps reconnecting every byte of a concurrent writer exactly once, in order', async () => {
    const { path, target } = fresh('')
    const lines = 20_000
    const last = `{"i":${lines - 1},"pad":"${'x'.repeat((lines - 1) % 97)}"}\n`
    const writer = `const fs=require('fs');const fd=fs.openSync(${JSON.stringify(path)},'a');for(let i=0;i<${lines};i++)fs.writeSync(fd,JSON.stringify({i,pad:'x'.repeat(i%97)})+'\\n')`
    spawn(process.execPath, ['-e', writer], { stdio: 'ignore' })
    const reader: Reader = { target, copy: Buffer.alloc(0) }
    let connections = 0
    // Three small chunks per connection, then away: the writer goes on meanwhile.
    while (!reader.copy.toString().endsWith(last) && connections < 2_000) {
      connections++
      const chunks = await connect(reader, (copy, got) => got.length >= 3 || copy.toString().endsWith(last), 4096)
      expect(chunks.every((c) => c.type === 'append')).toBe(true)
    }
    expect(connections).toBeGreaterThan(10)
    const text = reader.copy.toString().split('\n').slice(0, -1)
    expect(text.map((l) => JSON.parse(l).i)).toEqual(Array.from({ length: lines }, (_, i) => i))
  })

  it('continues with nothing when nothing was written, then with what was appended', async () => {
    const { path, target } = fresh('a1\n')
    const reader: Reader = { target, copy: Buffer.alloc(0) }
    await connect(reader, has('a1\n'))
    const at = reader.cursor
    // From the end, the first thing the resumed follow sends is the next append.
    setTimeout(() => appendFileSync(path, 'a2\n'), 200)
    expect(shown(await connect(reader, has('a1\na2\n')))).toEqual([['append', 'a2\n']])
    // The same cursor again gives the same bytes again: a cursor is a position, not a session.
    expect(shown(await connect({ target, copy: Buffer.from('a1\n'), cursor: at }, has('a1\na2\n')))).toEqual([['append', 'a2\n']])
  })

  it('says truncate when the file was cut, or rewritten in place, while the reader was away', async () => {
    const { path, target } = fresh('a1\na2\n')
    const reader: Reader = { target, copy: Buffer.alloc(0) }
    await connect(reader, has('a1\na2\n'))
    truncateSync(path, 0)
    appendFileSync(path, 'b1\n')
    expect(shown(await connect(reader, has('b1\n')))).toEqual([['truncate', 'b1\n']])
    appendFileSync(path, 'b2\n')
    expect(shown(await connect(reader, has('b1\nb2\n')))).toEqual([['append', 'b2\n']])
    // As long as before and longer, but other bytes before the offset: not a continuation.
    writeFileSync(path, 'c1 written again, longer than before\n')
    expect(shown(await connect(reader, has('c1 written again, longer than before\n')))).toEqual([
      ['truncate', 'c1 written again, longer than before\n'],
    ])
    // Cut to nothing: an empty truncate says the copy is void.
    truncateSync(path, 0)
    expect(shown(await connect(reader, (_copy, got) => got.length > 0))).toEqual([['truncate', '']])
    // A cursor taken after a truncate event goes on from there.
    appendFileSync(path, 'd1\n')
    expect(shown(await connect(reader, has('d1\n')))).toEqual([['append', 'd1\n']])
  })

  it('says replace after a rotation, then continues in the new file from a cursor the new file gave', async () => {
    const { path, target } = fresh('old 1\n')
    const reader: Reader = { target, copy: Buffer.alloc(0) }
    await connect(reader, has('old 1\n'))
    renameSync(path, `${path}.1`)
    writeFileSync(path, 'new 1\n')
    expect(shown(await connect(reader, has('new 1\n')))).toEqual([['replace', 'new 1\n']])
    // The handle names the old file; the cursor names the one it read last, and wins.
    appendFileSync(path, 'new 2\n')
    expect(shown(await connect(reader, has('new 1\nnew 2\n')))).toEqual([['append', 'new 2\n']])
    // An atomic rename over it while away, too.
    writeFileSync(`${path}.tmp`, 'v3\n')
    renameSync(`${path}.tmp`, path)
    expect(shown(await connect(reader, has('v3\n')))).toEqual([['replace', 'v3\n']])
  })

  it('waits for the path when the reader comes back in the middle of a rotation', async () => {
    const { path, target } = fresh('old\n')
    const reader: Reader = { target, copy: Buffer.alloc(0) }
    await connect(reader, has('old\n'))
    renameSync(path, `${path}.1`)
    setTimeout(() => writeFileSync(path, 'after the gap\n'), 300)
    expect(shown(await connect(reader, has('after the gap\n')))).toEqual([['replace', 'after the gap\n']])
  })

  it('refuses a cursor of another handle, an altered one, and one that is not a cursor', async () => {
    const { target } = fresh('x\n')
    const reader: Reader = { target, copy: Buffer.alloc(0) }
    await connect(reader, has('x\n'))
    const cursor = reader.cursor!
    expect(cursors.open(HANDLE, cursor).offset).toBe(2)
    expect(() => cursors.open('h1.f.another-handle', cursor)).toThrow(expect.objectContaining({ code: 'observe/cursor-invalid' }))
    const parts = cursor.split('.')
    const moved = [parts[0], '1', ...parts.slice(2)].join('.')
    expect(() => cursors.open(HANDLE, moved)).toThrow(expect.objectContaining({ code: 'observe/cursor-invalid' }))
    expect(() => new FollowCursors('another-secret-of-enough-length').open(HANDLE, cursor)).toThrow(
      expect.objectContaining({ code: 'observe/cursor-invalid' }),
    )
    for (const bad of ['', 'c1.2', `${cursor}x`, cursor.replace('c1.', 'c2.')]) {
      expect(() => cursors.open(HANDLE, bad), bad).toThrow(expect.objectContaining({ code: 'observe/cursor-invalid' }))
    }
    // It shows the offset and nothing of the file it names.
    expect(cursor).toMatch(/^c1\.2\.[\w-]{22}\.[\w-]{22}\.[\w-]{22}$/)
    expect(cursor).not.toContain(target.ino)
  })
})
