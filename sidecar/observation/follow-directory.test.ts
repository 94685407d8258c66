/**
 * A follow whose file's directory itself goes away, on real directories: rotated under the watch
 * (`mv sessions sessions.old; mkdir sessions`) the new file still arrives as `replace` (found at
 * the next heartbeat's look); resumed while the directory is missing, the follow waits for it
 * instead of failing, and the file that appears there arrives as `replace`.
 */
import { mkdirSync, mkdtempSync, realpathSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { FollowCursors } from './cursor.ts'
import { FileFollower, type FollowChunk, type FollowTarget } from './follow.ts'
import { objectOf } from './handles.ts'

const root = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-follow-dir-')))
afterAll(() => rmSync(root, { recursive: true, force: true }))
/** Short, so the look that finds a rotated directory comes soon; the production one is 15 s. */
const HEARTBEAT_MS = 100

function journalIn(name: string, content: string): { dir: string; path: string; target: FollowTarget } {
  const dir = join(root, name, 'sessions')
  mkdirSync(dir, { recursive: true })
  const path = join(dir, 'j.jsonl')
  writeFileSync(path, content)
  return { dir, path, target: { root, path, ...objectOf(statSync(path, { bigint: true })) } }
}

/** Chunks (heartbeats left out) until `until` holds; fails after 10 s. */
async function collect(follower: FileFollower, until: (chunks: FollowChunk[]) => boolean, meanwhile?: () => void): Promise<FollowChunk[]> {
  const abort = new AbortController()
  const timer = setTimeout(() => abort.abort(), 10_000)
  const chunks: FollowChunk[] = []
  try {
    for await (const chunk of follower.chunks(abort.signal, undefined, undefined, HEARTBEAT_MS)) {
      if (chunk === null) continue
      chunks.push(chunk)
      if (chunks.length === 1) meanwhile?.()
      if (until(chunks)) break
    }
  } finally {
    clearTimeout(timer)
    abort.abort()
  }
  return chunks
}

const shown = (chunks: FollowChunk[]) => chunks.map((c) => [c.type, c.bytes.toString()])

describe('a follow whose directory goes away', () => {
  it('finds the new file after the directory was rotated under its watch', async () => {
    const { dir, path, target } = journalIn('rotated', 'old 1\n')
    const follower = await FileFollower.open(target)
    const chunks = await collect(
      follower,
      (got) => got.some((c) => c.type === 'replace'),
      () => {
        renameSync(dir, `${dir}.old`)
        mkdirSync(dir)
        writeFileSync(path, 'new 1\n')
      },
    )
    expect(shown(chunks)).toEqual([
      ['append', 'old 1\n'],
      ['replace', 'new 1\n'],
    ])
  })

  it('waits, when resumed while the directory is missing, for it and its file to come back', async () => {
    const { dir, path, target } = journalIn('missing', 'a1\n')
    const cursors = new FollowCursors('a-test-secret-of-enough-length')
    const point = cursors.open('h', cursors.mint('h', objectOf(statSync(path, { bigint: true })), 3, Buffer.from('a1\n')))
    rmSync(dir, { recursive: true })
    const follower = await FileFollower.resume(target, point)
    setTimeout(() => {
      mkdirSync(dir)
      writeFileSync(path, 'b1\n')
    }, 300)
    expect(shown(await collect(follower, (got) => got.length > 0))).toEqual([['replace', 'b1\n']])
  })
})
