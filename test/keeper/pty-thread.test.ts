/**
 * The PTY thread on its own (real worker thread, real PTYs, the keeper's journal writer): output
 * arrives journaled in order and complete, a resize resolves once its Resize record follows every
 * byte read before it, a forced close still journals what the kernel held, input the PTY cannot
 * take yet waits in order, and a process that cannot start says why.
 */
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { PTY_UNJOURNALED_MAX_BYTES } from '../../keeper/tuning.ts'
import { loadIndex } from '../../local/journal/reader.ts'
import { JournalWriter } from '../../local/journal/writer.ts'
import { waitFor } from '../support/ports.ts'
import type { PtyExit } from '../../keeper/pty/pty-process.ts'
import { type OutputSink, type OutputTrouble, PtyThread, type RemotePty } from '../../keeper/pty/pty-thread.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-pty-thread-'))
const thread = new PtyThread()
let n = 0
afterAll(() => thread.close())

/** What the keeper's terminal does with output (keeper/terminals.ts), minus the sidecar. */
class Journal implements OutputSink {
  readonly writer: JournalWriter
  ended = false

  constructor(path: string) {
    this.writer = new JournalWriter({ spool: `${path}.journal`, index: `${path}.index` }, { cols: 80, rows: 24 })
  }

  appendFlushed(bytes: Uint8Array): void {
    this.writer.appendData([bytes], bytes.length)
  }

  appendResize(cols: number, rows: number): void {
    this.writer.appendResize(cols, rows)
  }

  end(): void {
    this.ended = true
  }

  get lastSequence(): number {
    return this.writer.lastSequence
  }

  geometryAt(sequence: number): { cols: number; rows: number } {
    return loadIndex(this.writer.paths.index).index.geometry(sequence)
  }

  /** Every record as written: Data as its bytes (latin1), a Resize as [R<cols>x<rows>]. */
  records(): string[] {
    const { index } = loadIndex(this.writer.paths.index)
    const spool = readFileSync(this.writer.paths.spool)
    const out: string[] = []
    for (let s = 1; s <= index.last; s++) {
      if (!index.isData(s)) {
        const { cols, rows } = index.geometry(s)
        out.push(`[R${cols}x${rows}]`)
      } else out.push(spool.toString('latin1', index.offset(s), index.offset(s) + index.length(s)))
    }
    return out
  }
}

const quiet: OutputTrouble = { failing: () => {}, recovered: () => {}, lost: () => {} }

async function start(script: string): Promise<{ pty: RemotePty; journal: Journal; ended: Promise<void>; exited: Promise<PtyExit> }> {
  const journal = new Journal(join(dir, `t${++n}`))
  const pty = await thread.spawn(
    {
      file: '/bin/sh',
      args: ['-c', script],
      cwd: dir,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', TERM: 'xterm-256color' },
      cols: 80,
      rows: 24,
    },
    journal,
    quiet,
  )
  const ended = new Promise<void>((resolve) => pty.onEnd(() => (journal.end(), resolve())))
  const exited = new Promise<PtyExit>((resolve) => pty.onExit(resolve))
  return { pty, journal, ended, exited }
}

async function text(journal: Journal): Promise<string> {
  return journal.records().join('')
}

describe('PtyThread', () => {
  it('journals every byte in order, then ends, then reports the exit', async () => {
    const { journal, ended, exited } = await start('i=0; while [ $i -lt 2000 ]; do echo "line-$i"; i=$((i+1)); done; exit 3')
    const order: string[] = []
    void ended.then(() => order.push('end'))
    const exit = await exited
    order.push('exit')
    await ended
    expect(exit).toEqual({ exitCode: 3, signal: null })
    expect(order).toEqual(['end', 'exit'])
    const lines = (await text(journal)).split('\r\n').filter(Boolean)
    expect(lines).toEqual(Array.from({ length: 2000 }, (_, i) => `line-${i}`))
  })

  it('resolves a resize once its record follows every byte read before it', async () => {
    const { pty, journal } = await start('stty -echo; echo ready; cat')
    await waitFor(async () => (await text(journal)).includes('ready'), 10_000, 'the shell')
    pty.write(Buffer.from('before\n'))
    await waitFor(async () => (await text(journal)).includes('before\r\n'), 10_000, 'the echo from cat')
    await pty.resize(100, 30)
    expect((await text(journal)).endsWith('before\r\n[R100x30]')).toBe(true)
    expect(journal.geometryAt(journal.lastSequence)).toEqual({ cols: 100, rows: 30 })
    pty.write(Buffer.from('after\n'))
    await waitFor(async () => (await text(journal)).endsWith('[R100x30]after\r\n'), 10_000, 'output after the resize')
    await pty.forceClose()
  })

  it('resolves a resize asked after the process exited at once (nothing would answer it)', async () => {
    const { pty, exited } = await start('exit 0')
    await exited
    const answer = await Promise.race([
      pty.resize(90, 20).then(() => 'resolved'),
      new Promise((r) => setTimeout(() => r('pending'), 2_000)),
    ])
    expect(answer).toBe('resolved')
  })

  it('a forced close still journals what the kernel held, and ends the source', async () => {
    // A background job keeps the slave open, so no EOF comes by itself.
    const { pty, journal, ended } = await start('printf kept-bytes; sleep 30 & exec sleep 30')
    await waitFor(async () => (await text(journal)).includes('kept-bytes'), 10_000, 'the output')
    await pty.forceClose()
    await ended
    expect(journal.ended).toBe(true)
    expect(await text(journal)).toBe('kept-bytes')
    process.kill(-pty.pid, 'SIGKILL')
  })

  it('stops reading while the journal does not confirm (the program waits), then delivers every byte', async () => {
    const total = 6 * PTY_UNJOURNALED_MAX_BYTES
    const doneFile = join(dir, 'flow-done')
    const { journal, ended } = await start(`head -c ${total} /dev/zero | tr '\\0' x; date +%s%N > ${doneFile}`)
    // This thread journals and confirms the flushes; keep it busy. Unchecked, the PTY thread would
    // read the whole output meanwhile (it takes ~1–2 s) and hold it in messages; with the cap the
    // program stays blocked after ~PTY_UNJOURNALED_MAX_BYTES until this thread is back.
    const until = Date.now() + 4000
    while (Date.now() < until) {
      // busy, like a main thread stuck in a long task
    }
    const back = Date.now()
    await ended
    const finishedAt = Number(readFileSync(doneFile, 'utf8').trim()) / 1e6
    expect(finishedAt).toBeGreaterThanOrEqual(back)
    let bytes = 0
    let others = 0
    for (const chunk of journal.records()) {
      bytes += chunk.length
      others += chunk.length - chunk.split('x').length + 1
    }
    expect([bytes, others]).toEqual([total, 0])
  }, 60_000)

  it('input the PTY has no room for waits, in order, until the program reads it', async () => {
    // Raw mode: every byte value reaches the program as it is. While it sleeps the kernel takes what
    // fits its input buffer (up to 64 KiB); the rest of 150 kB must wait in the PTY thread and go
    // in as the program reads.
    const { pty, journal, exited } = await start('stty raw -echo; echo ready; sleep 1; head -c 150000 | sha256sum; exit 0')
    await waitFor(async () => (await text(journal)).includes('ready'), 10_000, 'raw mode')
    const input = Buffer.alloc(150_000)
    for (let i = 0; i < input.length; i++) input[i] = (i * 7 + (i >> 8)) % 256
    for (let at = 0; at < input.length; at += 50_000) pty.write(input.subarray(at, at + 50_000))
    expect(await exited).toEqual({ exitCode: 0, signal: null })
    const expected = createHash('sha256').update(input).digest('hex')
    await waitFor(async () => (await text(journal)).includes(expected), 10_000, 'the hash of every input byte in order')
  }, 30_000)

  // Reads /proc; elsewhere (macOS) node-pty spawns with POSIX_SPAWN_CLOEXEC_DEFAULT, unpatched.
  it.skipIf(process.platform !== 'linux')(
    "gives a program its own terminal only: no other terminal's master, no descriptor of the keeper",
    async () => {
      const other = await start('sleep 30')
      try {
        // `ls -l` of the shell's own descriptors (a glob keeps the listing in the shell, no pipe).
        const { journal, ended } = await start('cd /proc/$$/fd && for fd in *; do echo "fd $fd $(readlink $fd)"; done')
        await ended
        const fds = (await text(journal)).split('\r\n').filter((line) => line.startsWith('fd '))
        expect(fds.length).toBeGreaterThanOrEqual(3)
        // 0–2 are the terminal; the command substitution's own pipe is the only other one allowed.
        const foreign = fds.filter((line) => !/^fd [012] \/dev\/pts\/\d+$/.test(line) && !/^fd \d+ pipe:/.test(line))
        expect(foreign, fds.join('; ')).toEqual([])
        expect(fds.filter((line) => line.includes('ptmx'))).toEqual([])
        expect(fds.filter((line) => /^fd \d{2,}/.test(line))).toEqual([])
      } finally {
        process.kill(other.pty.pid, 'SIGKILL')
      }
    },
  )

  it('closing the thread kills what still runs and waits for its exit before the thread stops', async () => {
    const own = new PtyThread()
    const journal = new Journal(join(dir, 'closing'))
    const pty = await own.spawn(
      {
        file: '/bin/sh',
        args: ['-c', "trap '' HUP; echo ready; while :; do sleep 1; done"],
        cwd: dir,
        env: { PATH: process.env.PATH ?? '/usr/bin:/bin' },
        cols: 80,
        rows: 24,
      },
      journal,
      quiet,
    )
    const exited = new Promise<PtyExit>((resolve) => pty.onExit(resolve))
    await waitFor(async () => (await text(journal)).includes('ready'), 10_000, 'the shell')
    await own.close()
    // The exit was reported before close resolved, and the process (deaf to SIGHUP) is gone.
    expect(await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve('late'), 0))])).toEqual({
      exitCode: null,
      signal: 9,
    })
    expect(() => process.kill(pty.pid, 0)).toThrow()
  })

  it('a process that cannot start says why in its output and exits non-zero', async () => {
    const journal = new Journal(join(dir, 'bad'))
    const pty = await thread.spawn({ file: '/no/such/shell', args: [], cwd: dir, env: {}, cols: 80, rows: 24 }, journal, quiet)
    const exit = await new Promise<PtyExit>((resolve) => pty.onExit(resolve))
    expect(exit.exitCode).not.toBe(0)
    await waitFor(async () => (await text(journal)).includes('No such file or directory'), 10_000, 'the reason')
  })
})
