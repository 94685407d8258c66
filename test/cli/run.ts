/**
 * Runs the real CLI (`node cli/bin.js …`) as a child process, the way a user's shell does, and
 * collects its exit code and output. TERMKEEP_URL/TERMKEEP_TOKEN are cleared unless given, so a
 * test never talks to a server by accident.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { PtyProcess } from '../../keeper/pty/pty-process.ts'

export const BIN = fileURLToPath(new URL('../../cli/bin.js', import.meta.url))

export interface CliResult {
  code: number
  stdout: string
  stderr: string
  /** stdout as the exact bytes. */
  bytes: Buffer
}

export function runCli(args: string[], env: Record<string, string> = {}, cwd = process.cwd()): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { cwd, env: { ...process.env, TERMKEEP_URL: '', TERMKEEP_TOKEN: '', ...env }, encoding: 'buffer', maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({
          code: error ? Number(error.code ?? 1) : 0,
          stdout: stdout.toString('utf8'),
          stderr: stderr.toString('utf8'),
          bytes: stdout,
        }),
    )
  })
}

/** A long-running CLI command (`--follow`, `--watch`): its output so far, and its end. */
export interface RunningCli {
  child: ChildProcess
  stdout(): string
  exited: Promise<{ code: number; stderr: string }>
}

export function startCli(args: string[], env: Record<string, string> = {}): RunningCli {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, TERMKEEP_URL: '', TERMKEEP_TOKEN: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let stdout = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<{ code: number; stderr: string }>((resolve) =>
    child.once('close', (code) => resolve({ code: code ?? -1, stderr })),
  )
  return { child, stdout: () => stdout, exited }
}

/**
 * A CLI process in a real PTY, with everything it printed collected. Through the sidecar's
 * PtyProcess, which reads the master to the end (plain node-pty may drop the last bytes at exit):
 * `exited` resolves once the process exited and all its output was read.
 */
export function runInPty(args: string[], env: Record<string, string>, cols = 100, rows = 30) {
  const pty = new PtyProcess({
    file: process.execPath,
    args: [BIN, ...args],
    cwd: process.cwd(),
    env: { ...process.env, ...env, TERM: 'xterm-256color' } as Record<string, string>,
    cols,
    rows,
  })
  const decoder = new TextDecoder()
  let output = ''
  pty.onData((data) => (output += decoder.decode(data, { stream: true })))
  const ended = new Promise<void>((resolve) => pty.onEnd(resolve))
  const exit = new Promise<number>((resolve) => pty.onExit(({ exitCode }) => resolve(exitCode ?? -1)))
  const exited = Promise.all([exit, ended]).then(([code]) => code)
  return { pty, exited, output: () => output, write: (text: string) => pty.write(Buffer.from(text)) }
}

/** Kills what a test left running in a PTY (an attach a failed assertion never detached). */
export function killPtys(ptys: readonly PtyProcess[]): void {
  for (const pty of ptys) {
    try {
      process.kill(pty.pid, 'SIGKILL')
    } catch {} // already gone
  }
}

/** Resolves with the exit code, or rejects after `ms` (a CLI that never ends fails the test, not the run). */
export function exitedWithin<T>(exited: Promise<T>, ms: number, what: string): Promise<T> {
  return Promise.race([exited, sleep(ms).then(() => Promise.reject(new Error(`${what} did not exit within ${ms} ms`)))])
}

/** Where nothing listens: every proxy and registry below points here, so nothing reaches a network. */
const CLOSED = 'http://127.0.0.1:9'

/**
 * The environment of a fresh user with no network: HOME is `home` (no ~/.npmrc, no node-gyp header
 * cache, no npx cache), no npm configuration inherited from the npm that runs the tests, and every
 * registry and proxy pointed at a closed port.
 */
export function offlineEnv(home: string): NodeJS.ProcessEnv {
  const kept = Object.entries(process.env).filter(([name]) => !/^npm_|^INIT_CWD$|proxy$/i.test(name))
  return {
    ...Object.fromEntries(kept),
    HOME: home,
    XDG_CACHE_HOME: `${home}/.cache`,
    TERMKEEP_URL: '',
    TERMKEEP_TOKEN: '',
    npm_config_registry: `${CLOSED}/`,
    npm_config_proxy: CLOSED,
    npm_config_https_proxy: CLOSED,
    HTTP_PROXY: CLOSED,
    HTTPS_PROXY: CLOSED,
    http_proxy: CLOSED,
    https_proxy: CLOSED,
  }
}
