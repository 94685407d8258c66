/**
 * Runs the real CLI (`node cli/bin.js …`) as a child process, the way a user's shell does, and
 * collects its exit code and output. TERMKEEP_URL/TERMKEEP_TOKEN are cleared unless given, so a
 * test never talks to a server by accident.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

export const BIN = fileURLToPath(new URL('../../cli/bin.js', import.meta.url))

export interface CliResult {
  code: number
  stdout: string
  stderr: string
  /** stdout as the exact bytes. */
  bytes: Buffer
}

export function runCli(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [BIN, ...args],
      { env: { ...process.env, TERMKEEP_URL: '', TERMKEEP_TOKEN: '', ...env }, encoding: 'buffer', maxBuffer: 256 * 1024 * 1024 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number(error.code ?? 1) : 0, stdout: stdout.toString('utf8'), stderr: stderr.toString('utf8'), bytes: stdout }),
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
  const child = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, TERMKEEP_URL: '', TERMKEEP_TOKEN: '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] })
  let stdout = ''
  let stderr = ''
  child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk))
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk))
  const exited = new Promise<{ code: number; stderr: string }>((resolve) => child.once('close', (code) => resolve({ code: code ?? -1, stderr })))
  return { child, stdout: () => stdout, exited }
}
