/**
 * FileFollower on real files and a real concurrent writer: every appended byte exactly once and
 * in order, chunks the host lowered, truncation (also a rewrite in place that ends up longer),
 * rotation with a gap, atomic rename-over, and paths that become special files or symlinks
 * leading out (never opened, never followed).
 */
import { spawn } from 'node:child_process'
import {
  appendFileSync,
  mkdirSync,
  mkdtempSync,
  realpathSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  truncateSync,
  writeFileSync,
} from 'node:fs'
import { execFileSync } from 'node:child_process'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { OBSERVE_MAX_FOLLOW_CHUNK_BYTES } from '../../../schema/limits.ts'
import { FileFollower, type FollowChunk } from '../../../sidecar/observation/follow.ts'
import { objectOf } from '../../../sidecar/observation/handles.ts'

const root = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-follow-')))
afterAll(() => rmSync(root, { recursive: true, force: true }))

let n = 0
function fresh(content = ''): string {
  const dir = join(root, `case-${++n}`)
  mkdirSync(dir)
  const path = join(dir, 'journal.jsonl')
  writeFileSync(path, content)
  return path
}

function target(path: string) {
  return { root, path, ...objectOf(statSync(path, { bigint: true })) }
}

/** Follows `path`, applying chunks to a copy, until `done(copy, chunks)`; `act(step)` runs after
 * each chunk, before the follower is asked for the next (it does not run meanwhile). */
async function follow(
  path: string,
  act: (step: number) => Promise<void> | void,
  done: (copy: Buffer, chunks: FollowChunk[]) => boolean,
  maxChunkBytes?: number,
) {
  const follower = await FileFollower.open(target(path), maxChunkBytes)
  const abort = new AbortController()
  const chunks: FollowChunk[] = []
  let copy = Buffer.alloc(0)
  let step = 0
  let timedOut = false
  const timer = setTimeout(() => ((timedOut = true), abort.abort()), 20_000)
  try {
    for await (const chunk of follower.chunks(abort.signal)) {
      if (chunk === null) continue
      chunks.push(chunk)
      if (chunk.type === 'append') {
        expect(chunk.offset).toBe(copy.length)
        copy = Buffer.concat([copy, chunk.bytes])
      } else {
        expect(chunk.offset).toBe(0)
        copy = Buffer.from(chunk.bytes)
      }
      if (done(copy, chunks)) break
      await act(++step)
    }
  } finally {
    clearTimeout(timer)
    abort.abort()
  }
  expect(timedOut, `the follow timed out; it got ${JSON.stringify(chunks.map((c) => [c.type, c.bytes.length]))}`).toBe(false)
  return { copy, chunks }
}

describe('FileFollower', () => {
  it("delivers the existing content, then a concurrent writer's every byte exactly once, in order", async () => {
    const path = fresh('first line\n')
    const lines = 20_000
    // Another process writes as fast as it can, in lines of varying length, while we follow.
    const writer = `const fs=require('fs');const fd=fs.openSync(${JSON.stringify(path)},'a');for(let i=0;i<${lines};i++)fs.writeSync(fd,JSON.stringify({i,pad:'x'.repeat(i%97)})+'\\n')`
    let started = false
    const { copy, chunks } = await follow(
      path,
      () => {
        if (started) return
        started = true
        spawn(process.execPath, ['-e', writer], { stdio: 'ignore' })
      },
      (copy) => copy.toString().endsWith(`"i":${lines - 1},"pad":"${'x'.repeat((lines - 1) % 97)}"}\n`),
    )
    const text = copy.toString().split('\n').slice(1, -1)
    expect(text.map((l) => JSON.parse(l).i)).toEqual(Array.from({ length: lines }, (_, i) => i))
    expect(chunks.every((c) => c.type === 'append')).toBe(true)
  })

  it('lowers the chunk size to the host maximum', async () => {
    const path = fresh('y'.repeat(3 * OBSERVE_MAX_FOLLOW_CHUNK_BYTES + 5))
    const { chunks } = await follow(
      path,
      () => {},
      (copy) => copy.length === 3 * OBSERVE_MAX_FOLLOW_CHUNK_BYTES + 5,
      10 ** 9,
    )
    expect(chunks.map((c) => c.bytes.length)).toEqual([
      OBSERVE_MAX_FOLLOW_CHUNK_BYTES,
      OBSERVE_MAX_FOLLOW_CHUNK_BYTES,
      OBSERVE_MAX_FOLLOW_CHUNK_BYTES,
      5,
    ])
    const small = await follow(
      path,
      () => {},
      (copy) => copy.length >= 10,
      4,
    )
    expect(small.chunks[0].bytes.length).toBe(4)
  })

  it('says truncate when the file shrinks, and when it was rewritten in place to something longer', async () => {
    const path = fresh('a1\na2\n')
    const { chunks } = await follow(
      path,
      (step) => {
        if (step === 1) truncateSync(path, 0) // shrinks: an empty truncate
        if (step === 2) appendFileSync(path, 'b1\n')
        if (step === 3) {
          // Cut and rewritten longer between two looks: only the bytes before the offset tell.
          writeFileSync(path, 'c1 the file was written again\nc2\n')
        }
      },
      (copy) => copy.toString() === 'c1 the file was written again\nc2\n',
    )
    expect(chunks.map((c) => [c.type, c.bytes.toString()])).toEqual([
      ['append', 'a1\na2\n'],
      ['truncate', ''],
      ['append', 'b1\n'],
      ['truncate', 'c1 the file was written again\nc2\n'],
    ])
  })

  it('finishes the old file, waits through a rotation gap, then says replace', async () => {
    const path = fresh('old 1\n')
    const { chunks } = await follow(
      path,
      (step) => {
        if (step !== 1) return
        appendFileSync(path, 'old 2\n')
        renameSync(path, `${path}.1`)
        // Nothing at the path for a while, while the follower keeps running.
        setTimeout(() => writeFileSync(path, 'new 1\n'), 200)
      },
      (copy) => copy.toString() === 'new 1\n',
    )
    expect(chunks.map((c) => [c.type, c.bytes.toString()])).toEqual([
      ['append', 'old 1\n'],
      ['append', 'old 2\n'],
      ['replace', 'new 1\n'],
    ])
  })

  it('says replace after an atomic rename over the file, then follows the new one', async () => {
    const path = fresh('v1\n')
    const { chunks } = await follow(
      path,
      (step) => {
        if (step === 1) {
          writeFileSync(`${path}.tmp`, 'v2\n')
          renameSync(`${path}.tmp`, path)
        }
        if (step === 2) appendFileSync(path, 'v2 more\n')
      },
      (copy) => copy.toString() === 'v2\nv2 more\n',
    )
    expect(chunks.map((c) => c.type)).toEqual(['append', 'replace', 'append'])
  })

  it('never opens a FIFO or follows a symlink out of the root that takes the path', async () => {
    const path = fresh('safe\n')
    const outside = join(tmpdir(), `termkeep-outside-${process.pid}.txt`)
    writeFileSync(outside, 'SECRET\n')
    try {
      const { copy, chunks } = await follow(
        path,
        (step) => {
          if (step !== 1) return
          // Each state lasts a while, and the follower keeps running through them.
          rmSync(path)
          execFileSync('mkfifo', [path])
          setTimeout(() => {
            rmSync(path)
            symlinkSync(outside, path)
            setTimeout(() => {
              rmSync(path)
              writeFileSync(path, 'regular again\n')
            }, 100)
          }, 100)
        },
        (copy) => copy.toString() === 'regular again\n',
      )
      expect(copy.toString()).toBe('regular again\n')
      expect(chunks.some((c) => c.bytes.toString().includes('SECRET'))).toBe(false)
    } finally {
      rmSync(outside, { force: true })
    }
  })

  it('refuses a target that is no longer the file it names', async () => {
    const path = fresh('x\n')
    const stale = target(path)
    rmSync(path)
    writeFileSync(path, 'another\n')
    writeFileSync(join(root, 'pad'), 'keeps the old inode from being reused at once')
    const now = target(path)
    if (now.ino === stale.ino && now.born === stale.born) return // the filesystem cannot tell them apart
    await expect(FileFollower.open(stale)).rejects.toMatchObject({ code: 'observe/handle-invalid' })
    await expect(FileFollower.open({ ...now, root: join(root, 'elsewhere') })).rejects.toMatchObject({ code: 'observe/handle-invalid' })
  })
})
