/**
 * The walls behind the engine, tested in real script processes (escapes.test.ts has the engine's
 * own corpus):
 *
 * - the OS: code that did escape the engine (here: a program given to the process in place of
 *   the engine's host side, so it runs with the process's own `process`) can read no file but the
 *   engine's, and in its namespaces signal nothing outside its PID namespace and connect to
 *   nothing, not even a port listening on loopback; without namespaces it could (the gap health
 *   and the start-up line name);
 * - establishing the sandbox at start: refused where the engine does not load or namespaces are
 *   required and missing, allowed without them only when the operator said so;
 * - the sidecar's own measure of a script process (the backstop behind the engine's limits);
 * - the sidecar's death kills even a spinning script process.
 */
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probeNamespaces, ScriptProcess, type Sandbox, type ScriptExit } from '../../sidecar/workflows/process.ts'
import { engineFiles } from '../../sidecar/workflows/quickjs.ts'
import { WORKFLOW_READS_IN_FLIGHT, WORKFLOW_SCRIPT_MESSAGE_MAX_BYTES } from '../../sidecar/workflows/tuning.ts'
import { ScriptCheck } from '../../sidecar/workflows/check.ts'
import { establishSandbox, namespaceMode, sandboxWarning } from '../../sidecar/workflows/sandbox.ts'
import { treeUsage, watchUsage } from '../../sidecar/workflows/usage.ts'
import { runInProcess, SANDBOXES, startOf } from './script-process.ts'
import { alive, eventually } from './support.ts'

// Whether this kernel lets an unprivileged user make the namespaces; where it does not, the
// namespaced sandbox is the fallback (and the OS tests of namespaces have nothing to test).
const kernelAllows = spawnSync('unshare', ['--user', '--map-root-user', '--pid', '--net', '--fork', 'true']).status === 0

/** Runs in the script process's host realm: what an escaped script could do. */
const ESCAPED = `'use strict';
(start, channel) => {
  const { pid, port, wasm } = JSON.parse(start.input)
  const found = { ppid: process.ppid }
  for (const [name, target] of [['parent', pid], ['everyone', -1]]) {
    try { process.kill(target, 0); found[name] = 'signalled' } catch (error) { found[name] = error.code }
  }
  const fs = process.getBuiltinModule('node:fs')
  for (const [name, path] of [['passwd', '/etc/passwd'], ['engine', wasm]]) {
    try { fs.readFileSync(path); found[name] = 'read' } catch (error) { found[name] = error.code }
  }
  try { fs.writeFileSync('/tmp/termkeep-escaped', 'x'); found.write = 'written' } catch (error) { found.write = error.code }
  try { process.getBuiltinModule('node:child_process').spawnSync('true'); found.spawn = 'spawned' } catch (error) { found.spawn = error.code }
  const socket = process.getBuiltinModule('node:net').connect(port, '127.0.0.1')
  const report = (how) => {
    found.connect = how
    socket.destroy()
    channel.send({ type: 'log', message: JSON.stringify(found) })
    channel.send({ type: 'done', stopReason: 'completed', value: 'null' })
  }
  socket.once('connect', () => report('connected'))
  socket.once('error', (error) => report(error.code))
}`

describe('the OS: an escaped script reaches nothing', () => {
  let server: Server
  let port: number
  const wasm = new URL('emscripten-module.wasm', import.meta.resolve('@jitl/quickjs-wasmfile-release-sync')).pathname
  beforeAll(async () => {
    server = createServer((socket) => socket.destroy())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const escape = async (chosen: Sandbox) => {
    const { logs } = await runInProcess(chosen, startOf('', { pid: process.pid, port, wasm }), ESCAPED)
    return JSON.parse(logs[0])
  }
  const FILES = { passwd: 'ERR_ACCESS_DENIED', engine: 'read', write: 'ERR_ACCESS_DENIED', spawn: 'ERR_ACCESS_DENIED' }

  it('namespaces are used wherever the kernel allows them', () => {
    expect(Boolean(SANDBOXES.namespaced.wrapper)).toBe(kernelAllows)
  })

  it.skipIf(!kernelAllows)(
    'in its namespaces it reads only the engine, and cannot signal its parent or anyone, nor connect to loopback',
    async () => {
      expect(await escape(SANDBOXES.namespaced)).toEqual({ ppid: 0, parent: 'ESRCH', everyone: 'ESRCH', connect: 'ENETUNREACH', ...FILES })
    },
  )

  it('without them it reads only the engine too, but could signal and connect (the gap health names)', async () => {
    expect(await escape(SANDBOXES.fallback)).toMatchObject({ parent: 'signalled', everyone: 'signalled', connect: 'connected', ...FILES })
  })

  it('probing falls back when unshare is missing or cannot make the namespaces', async () => {
    expect(await probeNamespaces({ setpriv: '/usr/bin/setpriv' })).toEqual({ missing: 'unshare (util-linux) is not installed' })
    const refused = await probeNamespaces({ unshare: '/bin/false', setpriv: '/usr/bin/setpriv' })
    expect(refused.wrapper).toBeUndefined()
    expect(refused.missing).toMatch(/^unshare cannot create user, PID and network namespaces here/)
  })
})

/** An escaped script writing to its channel's file descriptor (3) itself, whatever the bootstrap made of it. */
const RAW_WRITER = (lines: string) => `'use strict';
(start) => {
  const fs = process.getBuiltinModule('node:fs')
  const wait = new Int32Array(new SharedArrayBuffer(4))
  const put = (text) => {
    const bytes = Buffer.from(text)
    for (let at = 0; at < bytes.length; ) {
      try { at += fs.writeSync(3, bytes, at) } catch (error) { if (error.code !== 'EAGAIN') throw error; Atomics.wait(wait, 0, 0, 1) }
    }
  }
  ${lines}
}`

describe('the channel: an escaped script cannot take the sidecar down through it', () => {
  /** Runs `program` in a script process; resolves with what the host side received once it ended. */
  const hear = (chosen: Sandbox, program: string) =>
    new Promise<{ messages: unknown[]; exit: ScriptExit }>((resolve) => {
      const messages: unknown[] = []
      const child = new ScriptProcess(startOf(''), (message) => messages.push(message), chosen, program)
      void child.exited.then((exit) => resolve({ messages, exit }))
    })

  for (const mode of ['namespaced', 'fallback'] as const) {
    it(`messages Node's IPC would act on are only data to the sidecar (${mode})`, async () => {
      // Over Node's IPC channel, the first of these threw an internal assertion in the parent.
      const program = RAW_WRITER(`
        put('{"cmd":"NODE_HANDLE_ACK"}\\n{"cmd":"NODE_HANDLE_NACK"}\\n{"cmd":"NODE_HANDLE","type":"net.Socket","msg":{}}\\n')
        put('{"type":"log","message":"still heard"}\\n')
        process.exit(0)`)
      const { messages } = await hear(SANDBOXES[mode], program)
      expect(messages).toEqual([
        { cmd: 'NODE_HANDLE_ACK' },
        { cmd: 'NODE_HANDLE_NACK' },
        { cmd: 'NODE_HANDLE', type: 'net.Socket', msg: {} },
        { type: 'log', message: 'still heard' },
      ])
    })

    it(`a line longer than any honest message ends the process, unread (${mode})`, async () => {
      const program = RAW_WRITER(`put('{"type":"log","message":"' + 'a'.repeat(${2 * WORKFLOW_SCRIPT_MESSAGE_MAX_BYTES}))`)
      const { messages, exit } = await hear(SANDBOXES[mode], program)
      expect(messages).toHaveLength(1)
      expect(messages[0]).toBeInstanceOf(Error)
      expect((messages[0] as Error).message).toBe(`the script process sent a message over ${WORKFLOW_SCRIPT_MESSAGE_MAX_BYTES} bytes`)
      expect(exit.signal).toBe('SIGKILL')
    })
  }

  it('a line that is not JSON ends the process', async () => {
    const { messages, exit } = await hear(SANDBOXES.fallback, RAW_WRITER(`put('{"type":\\n'); setTimeout(() => {}, 10_000)`))
    expect(messages.map((message) => (message as Error).message)).toEqual(['the script process sent a line that is not JSON'])
    expect(exit.signal).toBe('SIGKILL')
  })
})

describe("what a run's script process has out at the sidecar at once", () => {
  // Every call is made before the log line, which the sidecar hears after all of them.
  const SCRIPT = `
    const reads = []
    for (let i = 0; i < 200; i++) reads.push(readText('f' + i).catch(() => 'no file'))
    const agents = []
    for (let i = 0; i < 20; i++) agents.push(agent('p' + i))
    log('all asked')
    await Promise.all([...reads, ...agents])
    return 'all answered'`

  for (const mode of ['namespaced', 'fallback'] as const) {
    it(`is at most the run's concurrency of agent() calls and WORKFLOW_READS_IN_FLIGHT readText() calls; the rest wait in the guest (${mode})`, async () => {
      const concurrency = 3
      const out = { agent: new Set<number>(), 'read-text': new Set<number>() }
      const most = { agent: 0, 'read-text': 0 }
      const total = { agent: 0, 'read-text': 0 }
      let asked: { agent: number; 'read-text': number } | undefined
      const done = await new Promise<any>((resolve, reject) => {
        const answer = (type: 'agent' | 'read-text', call: number) => {
          out[type].delete(call)
          if (type === 'agent') {
            const result = { stopReason: 'completed' as const, text: 'ok', truncated: false, exitCode: 0, terminal: 't', seq: call }
            child.send({ type: 'agent-result', call, result })
          } else child.send({ type: 'read-text-result', call, error: { code: 'files/not-found', message: 'no', fatal: false } })
        }
        const child: ScriptProcess = new ScriptProcess(
          { ...startOf(SCRIPT), concurrency },
          (message: any) => {
            if (message.type === 'agent' || message.type === 'read-text') {
              const type = message.type as 'agent' | 'read-text'
              out[type].add(message.call)
              total[type]++
              most[type] = Math.max(most[type], out[type].size)
              // Answered a little later, so that a process that did not wait would show it.
              if (asked) setTimeout(() => answer(type, message.call), 1)
            }
            if (message.type === 'log') {
              asked = { agent: out.agent.size, 'read-text': out['read-text'].size }
              for (const type of ['agent', 'read-text'] as const) for (const call of [...out[type]]) answer(type, call)
            }
            if (message.type === 'done') {
              child.kill()
              resolve(message)
            }
          },
          SANDBOXES[mode],
        )
        void child.exited.then((exit) => reject(new Error(`exited first: ${JSON.stringify(exit)}`)))
      })
      expect(asked).toEqual({ agent: concurrency, 'read-text': WORKFLOW_READS_IN_FLIGHT })
      expect(most).toEqual({ agent: concurrency, 'read-text': WORKFLOW_READS_IN_FLIGHT })
      expect(total).toEqual({ agent: 20, 'read-text': 200 })
      expect(done).toMatchObject({ stopReason: 'completed', value: '"all answered"' })
    })
  }
})

describe('establishing the sandbox at start', () => {
  const none = async () => ({ missing: 'unshare (util-linux) is not installed' })

  it('TERMKEEP_WORKFLOW_NAMESPACES takes required (the default), optional or off', () => {
    expect([namespaceMode(undefined), namespaceMode(''), namespaceMode('optional'), namespaceMode('off')]).toEqual([
      'required',
      'required',
      'optional',
      'off',
    ])
    expect(() => namespaceMode('yes')).toThrow(/TERMKEEP_WORKFLOW_NAMESPACES.*required, optional, off/)
  })

  it.skipIf(!kernelAllows)('ready, in namespaces, where the kernel allows them', async () => {
    const state = await establishSandbox('required')
    expect(state.health).toEqual({ available: true, namespaces: true })
    expect(sandboxWarning(state)).toBeUndefined()
  })

  it('refuses runs when namespaces are required and missing, and says what to set', async () => {
    const state = await establishSandbox('required', { namespaces: none })
    expect(state).toMatchObject({ ready: false, health: { available: false, namespaces: false } })
    expect(state.health.reason).toMatch(/unshare \(util-linux\) is not installed\. Set TERMKEEP_WORKFLOW_NAMESPACES=optional/)
    expect(sandboxWarning(state)).toMatch(/^termkeep sidecar: warning: workflow runs are refused: script processes cannot get namespaces/)
  })

  it('runs without namespaces only when the operator opted in (optional), or turned them off, and says so', async () => {
    for (const [mode, why] of [
      ['optional', 'unshare (util-linux) is not installed'],
      ['off', 'TERMKEEP_WORKFLOW_NAMESPACES=off'],
    ] as const) {
      const state = await establishSandbox(mode, { namespaces: none })
      expect(state.ready).toBe(true)
      expect(state.health).toEqual({ available: true, namespaces: false, reason: `scripts run without namespaces of their own: ${why}` })
      expect(sandboxWarning(state)).toMatch(/^termkeep sidecar: warning: scripts run without namespaces of their own/)
    }
  })

  it('refuses runs when the engine does not load, whatever the setting', async () => {
    const missing = () => ({ ...engineFiles(), core: new URL('file:///nonexistent/quickjs.mjs').href })
    for (const mode of ['required', 'optional', 'off'] as const) {
      const state = await establishSandbox(mode, { files: missing })
      expect(state.ready).toBe(false)
      expect(state.health.reason).toMatch(/^the script engine \(QuickJS, WebAssembly\) does not load: /)
    }
  })

  it('refuses runs when a script process cannot load the engine (it may read only what it is told)', async () => {
    const unreadable = () => ({ ...engineFiles(), readable: [] })
    const state = await establishSandbox('off', { files: unreadable })
    expect(state.ready).toBe(false)
    expect(state.health.reason).toMatch(/^a script process does not start as configured: .*(could not load|ERR_ACCESS_DENIED)/)
  })
})

describe('the parse check before a run is published', () => {
  // QuickJS compiles this in time that grows with the square of its classes: seconds, not milliseconds.
  const SLOW = Array.from({ length: 5000 }, (_, i) => `class C${i} { #a; m() { return this.#a } }`).join('\n')

  it("runs off the sidecar's event loop, which keeps turning meanwhile", async () => {
    const check = new ScriptCheck(engineFiles(), 120_000)
    try {
      expect(await check.problem('return (')).toMatch(/^the script does not parse: /)
      let turns = 0
      const timer = setInterval(() => turns++, 5)
      const started = performance.now()
      const problem = await check.problem(SLOW)
      const took = performance.now() - started
      clearInterval(timer)
      expect(problem).toBeUndefined()
      // Checked in this thread, not one turn happened until it was done.
      expect(turns).toBeGreaterThan(Math.min(10, took / 50))
      expect(await check.problem('return 1')).toBeUndefined()
    } finally {
      await check.close()
    }
  })

  it('refuses a script that takes longer than its limit to parse, and checks the next one with a new worker', async () => {
    const check = new ScriptCheck(engineFiles(), 100)
    try {
      expect(await check.problem('return 1')).toBeUndefined()
      expect(await check.problem(SLOW)).toBe('the script takes too long to parse (over 0.1 s): it is refused')
      expect(await check.problem('return (')).toMatch(/^the script does not parse: /)
    } finally {
      await check.close()
    }
  })
})

describe("the sidecar's own measure of a script process", () => {
  const child = (code: string) => spawn(process.execPath, ['-e', code], { stdio: 'ignore' })

  it('ends a process past its CPU time, and one past its memory', async () => {
    const spinning = child('for (;;) {}')
    const hoarding = child('const all = []; setInterval(() => all.push(Buffer.alloc(16 << 20, 1)), 20)')
    try {
      const watch = (pid: number, bounds: { cpuMs: number; rssBytes: number }) =>
        new Promise<string>((resolve) => watchUsage(pid, bounds, (limit) => resolve(limit), 50))
      const seen = await Promise.all([
        watch(spinning.pid!, { cpuMs: 300, rssBytes: 1 << 30 }),
        watch(hoarding.pid!, { cpuMs: 60_000, rssBytes: 300 << 20 }),
      ])
      expect(seen).toEqual(['cpu-time', 'memory'])
      expect(treeUsage(spinning.pid!)!.cpuMs).toBeGreaterThan(300)
    } finally {
      spinning.kill('SIGKILL')
      hoarding.kill('SIGKILL')
    }
  })
})

describe("the sidecar's death", () => {
  const BUSY = `'use strict'; (start, channel) => { channel.send({ type: 'log', message: 'spinning' }); for (;;) {} }`
  const HOLDER = `
    import { ScriptProcess } from ${JSON.stringify(new URL('../../sidecar/workflows/process.ts', import.meta.url).pathname)}
    import { SANDBOXES, startOf } from ${JSON.stringify(new URL('./script-process.ts', import.meta.url).pathname)}
    const child = new ScriptProcess(startOf(''), () => console.log(child.pid), SANDBOXES[process.argv.at(-1)], ${JSON.stringify(BUSY)})`

  /** The pids of a process and its descendants (Linux /proc). */
  const tree = (pid: number): number[] => {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number)
    return [pid, ...children.flatMap(tree)]
  }

  for (const mode of ['namespaced', 'fallback'] as const) {
    it(`kills a spinning script process (${mode})`, async () => {
      const holder = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', HOLDER, mode], {
        stdio: ['ignore', 'pipe', 'inherit'],
      })
      const pid = await new Promise<number>((resolve) => holder.stdout.once('data', (chunk) => resolve(Number(String(chunk).trim()))))
      const scripts = tree(pid)
      expect(scripts.every(alive)).toBe(true)
      holder.kill('SIGKILL')
      expect(await eventually(() => !scripts.some(alive), 10_000)).toBe(true)
    })
  }
})
