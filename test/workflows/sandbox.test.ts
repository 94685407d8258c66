/**
 * How a workflow script is confined, tested in real script processes (ScriptProcess, the path a
 * run takes; test/workflows/script-process.ts stands in for the sidecar's side of the IPC):
 *
 * - the realm: nothing the script can reach leads out of its `node:vm` context, whatever it walks
 *   (`.constructor.constructor`, prototypes, caught errors, stack-trace CallSites, `this`);
 * - the OS: code that did escape (here: a program given to the process in place of the script
 *   API, so it runs with the host realm's `process`) can signal nothing outside its own PID
 *   namespace and connect to nothing, not even a port listening on loopback;
 * - the sidecar's death kills even a spinning script process.
 */
import { spawn, spawnSync } from 'node:child_process'
import { readFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { probeSandbox, sandboxWarning, type Sandbox } from '../../sidecar/workflows/process.ts'
import { runInProcess, startOf } from './script-process.ts'
import { alive, eventually } from './support.ts'

const sandbox = probeSandbox()
const plain: Sandbox = { missing: 'none wanted (test)' }
// Whether this kernel lets an unprivileged user make the namespaces; where it does not, the
// sidecar falls back to `plain` (and says so), and the OS tests below have nothing to test.
const kernelAllows = spawnSync('unshare', ['--user', '--map-root-user', '--pid', '--net', '--fork', 'true']).status === 0

/** In the script: is `x` of the context's realm (its prototype chain ends at the context's Object.prototype)? */
const PRELUDE = `
const ours = (x) => {
  if (x === null || x === undefined || (typeof x !== 'object' && typeof x !== 'function')) return true
  let p = x
  for (let next; (next = Object.getPrototypeOf(p)) !== null; ) p = next
  return p === Object.prototype
}
const processVia = (F) => F('return typeof process')()
`

async function valueOf(script: string, input?: unknown): Promise<any> {
  const { done } = await runInProcess(sandbox, startOf(PRELUDE + script, input))
  expect(done.stopReason, done.error).toBe('completed')
  return JSON.parse(done.value!)
}

describe('the realm: no host object reaches the script', () => {
  it('helpers, their results, promises, errors, `this` and the global lead only to the context', async () => {
    const found = await valueOf(
      `
      const found = {
        agentConstructor: [ours(agent.constructor), agent.constructor === Function, processVia(agent.constructor)],
        logConstructorConstructor: [log.constructor.constructor === Function, processVia(log.constructor.constructor)],
        parallelPrototype: [Object.getPrototypeOf(parallel) === Function.prototype],
        helpers: [agent, parallel, pipeline, readText, log].map(ours),
        input: [ours(input), ours(input.list), input.list instanceof Array],
        thisConstructor: [ours(this), ours(this.constructor), processVia(this.constructor.constructor)],
        global: [ours(globalThis), typeof globalThis.process, typeof require],
      }
      const promise = agent('one')
      found.promise = [ours(promise), promise instanceof Promise, processVia(promise.constructor.constructor)]
      const result = await promise
      found.result = [ours(result), result.constructor === Object, processVia(result.constructor.constructor), result.text]
      found.combined = await parallel([1], () => agent('two')).then((out) => [ours(out), out instanceof Array, out[0]])
      try { await readText('missing.txt') } catch (error) {
        found.caught = [ours(error), error instanceof Error, error.code, processVia(error.constructor.constructor)]
      }
      return found`,
      { list: [1] },
    )
    expect(found).toEqual({
      agentConstructor: [true, true, 'undefined'],
      logConstructorConstructor: [true, 'undefined'],
      parallelPrototype: [true],
      helpers: [true, true, true, true, true],
      input: [true, true, true],
      thisConstructor: [true, true, 'undefined'],
      global: [true, 'undefined', 'undefined'],
      promise: [true, true, 'undefined'],
      result: [true, true, 'undefined', 'did one'],
      combined: [true, true, 'did two'],
      caught: [true, true, 'files/not-found', 'undefined'],
    })
  })

  it("a fatal WorkflowError caught from a helper is the context's too (the run still ends with it)", async () => {
    const { done, logs } = await runInProcess(
      sandbox,
      startOf(
        PRELUDE +
          'try { agent(42) } catch (error) { log(JSON.stringify([ours(error), error.name, processVia(error.constructor.constructor)])) }\nreturn 1',
      ),
    )
    expect(logs).toEqual(['[true,"WorkflowError","undefined"]'])
    expect(done).toMatchObject({ stopReason: 'error', error: expect.stringMatching(/^INVALID_ARGUMENT: agent\(prompt/) })
  })

  it('Error.prepareStackTrace CallSites, also from a hook run beneath the host, give nothing of the host', async () => {
    const found = await valueOf(`
      const frames = []
      Error.prepareStackTrace = (error, sites) => sites
      const capture = function () {
        const sites = new Error().stack
        frames.push(...sites.map((site) => ({
          site: ours(site),
          fn: ours(site.getFunction()),
          self: ours(site.getThis()),
          via: processVia(site.constructor.constructor),
          host: String(site.getFileName() ?? '').startsWith('node:'),
          caller: ours(capture.caller),
        })))
      }
      // Resolving a promise with an object reads its \`then\`: this getter runs inside the host's
      // call that delivers agent()'s result, with the host's frames beneath it.
      Object.defineProperty(Object.prototype, 'then', { configurable: true, get: function () { capture(); return undefined } })
      await agent('x')
      delete Object.prototype.then
      Error.prepareStackTrace = undefined
      return { sites: ours(frames), hostFrames: frames.filter((f) => f.host).length, leaks: frames.filter((f) => !(f.site && f.fn && f.self && f.via === 'undefined' && f.caller)) }`)
    expect(found.sites).toBe(true)
    expect(found.hostFrames).toBeGreaterThan(0) // the host's frames were there to be tried
    expect(found.leaks).toEqual([])
  })

  it('log() formats values in the context (an inspect.custom hook gets no host function)', async () => {
    const { logs } = await runInProcess(
      sandbox,
      startOf(`
        const hook = { [Symbol.for('nodejs.util.inspect.custom')]: (...args) => 'called with ' + args.length }
        log('n', 1, { deep: [1, 'two', { three: { four: { five: { six: 1 }, empty: {} } } }], m: new Map([[1, 2]]) }, hook, [], null, undefined, () => 1)`),
    )
    expect(logs).toEqual([
      "n 1 { deep: [ 1, 'two', { three: { four: { five: [Object], empty: {} } } } ], m: Map(1) { 1 => 2 } } {} [] null undefined [Function (anonymous)]",
    ])
  })
})

/** Runs in the script process's host realm: what an escaped script could do. */
const ESCAPED = `'use strict';
(start) => {
  const { pid, port } = JSON.parse(start.input)
  const found = { ppid: process.ppid }
  for (const [name, target] of [['parent', pid], ['everyone', -1]]) {
    try { process.kill(target, 0); found[name] = 'signalled' } catch (error) { found[name] = error.code }
  }
  const socket = process.getBuiltinModule('node:net').connect(port, '127.0.0.1')
  const report = (how) => {
    found.connect = how
    socket.destroy()
    process.send({ type: 'log', message: JSON.stringify(found) })
    process.send({ type: 'done', stopReason: 'completed', value: 'null' })
  }
  socket.once('connect', () => report('connected'))
  socket.once('error', (error) => report(error.code))
}`

describe('the OS: an escaped script reaches nothing', () => {
  let server: Server
  let port: number
  beforeAll(async () => {
    server = createServer((socket) => socket.destroy())
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    port = (server.address() as { port: number }).port
  })
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))

  const escape = async (chosen: Sandbox) => {
    const { logs } = await runInProcess(chosen, startOf('', { pid: process.pid, port }), ESCAPED)
    return JSON.parse(logs[0])
  }

  it('namespaces are used wherever the kernel allows them', () => {
    expect(Boolean(sandbox.wrapper)).toBe(kernelAllows)
    expect(sandboxWarning(sandbox) === undefined).toBe(kernelAllows)
  })

  it.skipIf(!kernelAllows)('in its namespaces it cannot signal its parent (the sidecar) or anyone, nor connect to loopback', async () => {
    expect(await escape(sandbox)).toEqual({ ppid: 0, parent: 'ESRCH', everyone: 'ESRCH', connect: 'ENETUNREACH' })
  })

  it('without them it could (the gap the start-up warning names)', async () => {
    expect(await escape(plain)).toMatchObject({ parent: 'signalled', connect: 'connected' })
  })

  it('falls back, with one warning line, when unshare is missing or cannot make the namespaces', () => {
    const missing = probeSandbox({ setpriv: '/usr/bin/setpriv' })
    expect(missing).toEqual({ missing: 'unshare (util-linux) is not installed' })
    expect(sandboxWarning(missing)).toMatch(
      /^termkeep sidecar: warning: workflow scripts run without OS isolation: unshare \(util-linux\) is not installed\./,
    )
    const refused = probeSandbox({ unshare: '/bin/false', setpriv: '/usr/bin/setpriv' })
    expect(refused.wrapper).toBeUndefined()
    expect(refused.missing).toMatch(/^unshare cannot create user, PID and network namespaces here/)
  })
})

describe("the sidecar's death", () => {
  const BUSY = `'use strict'; (start) => { process.send({ type: 'log', message: 'spinning' }); for (;;) {} }`
  const HOLDER = `
    import { ScriptProcess, probeSandbox } from ${JSON.stringify(new URL('../../sidecar/workflows/process.ts', import.meta.url).pathname)}
    const sandbox = process.argv.at(-1) === 'plain' ? { missing: 'test' } : probeSandbox()
    const child = new ScriptProcess({ script: '', profiles: [], defaultProfile: null, limits: {} }, () => console.log(child.pid), sandbox, ${JSON.stringify(BUSY)})`

  /** The pids of a process and its descendants (Linux /proc). */
  const tree = (pid: number): number[] => {
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').split(' ').filter(Boolean).map(Number)
    return [pid, ...children.flatMap(tree)]
  }

  for (const mode of ['probed', 'plain'] as const) {
    it(`kills a spinning script process (${mode} sandbox)`, async () => {
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
