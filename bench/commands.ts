/**
 * Commands benchmark (`npm run bench -- commands`): the latency of running `true` in an existing
 * shell and knowing it ended, side by side in one run.
 *
 *   termkeep  MCP `tools/call run_in_terminal {command: "true"}` through `/mcp` on one Node server
 *             with a real sidecar: a bash with termkeep's integration types it at its prompt, the
 *             end mark comes back through the journal, the answer carries the exit code and text.
 *   tmux      what the tmux MCP servers do: `tmux send-keys -t pane 'true; tmux wait-for -S ch'
 *             Enter` and `tmux wait-for ch` (two tmux client processes; its bash without rc files).
 *
 * Calls alternate in blocks so both see the same machine load. Target: p50 ≤ 1.5× tmux's; p99
 * reported.
 */
import { execFile, spawn } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { startBenchStack } from './stack.ts'
import type { BenchRow, BenchScenario } from './table.ts'

const run = promisify(execFile)
const CALLS = 200
const BLOCK = 20
const WARMUP = 10
const TARGET = 1.5

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!
}

function toolCall(args: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'run_in_terminal', arguments: args } })
}

/** A tmux server of its own (a private socket) with one bash pane, ready at its prompt. */
async function startTmux(socket: string): Promise<{ call(): Promise<void>; close(): Promise<void> }> {
  const tmux = (...args: string[]) => run('tmux', ['-L', socket, '-f', '/dev/null', ...args])
  await tmux('new-session', '-d', '-s', 'bench', '-x', '80', '-y', '24', 'bash --norc --noprofile')
  let n = 0
  return {
    async call() {
      const channel = `done-${n++}`
      // The waiter first, so the signal always finds it.
      const waiter = new Promise<void>((resolve, reject) => {
        const child = spawn('tmux', ['-L', socket, 'wait-for', channel], { stdio: 'ignore' })
        child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`tmux wait-for exited ${code}`))))
      })
      await tmux('send-keys', '-t', 'bench', `true; tmux -L ${socket} wait-for -S ${channel}`, 'Enter')
      await waiter
    },
    close: async () => {
      await tmux('kill-server').catch(() => {})
    },
  }
}

const scenario: BenchScenario = {
  name: 'commands',
  async run(): Promise<BenchRow[]> {
    const metric = 'run_in_terminal("true") p50 vs tmux send-keys + wait-for'
    const stack = await startBenchStack('commands', undefined, { sidecarEnv: { SHELL: '/bin/bash' } })
    const tmux = await startTmux(`termkeep-bench-${process.pid}`)
    try {
      const { base, auth, dir } = stack
      const json = { ...auth, 'content-type': 'application/json' }
      const ws = join(dir, 'workspace')
      mkdirSync(ws, { recursive: true })
      await fetch(`${base}/v1/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ id: 'bench', cwd: ws }) })
      await fetch(`${base}/v1/sessions/bench/terminals/sh`, {
        method: 'PUT',
        headers: json,
        body: JSON.stringify({ shell: '/bin/bash', cols: 80, rows: 24 }),
      })
      const mcp = { ...json, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }
      const body = toolCall({ sid: 'bench', tid: 'sh', command: 'true' })
      const termkeep = async () => {
        const answer = await (await fetch(`${base}/mcp`, { method: 'POST', headers: mcp, body })).text()
        if (!answer.includes('\\"exitCode\\":0') || !answer.includes('\\"ended\\":true'))
          throw new Error(`run_in_terminal answered ${answer.slice(0, 300)}`)
      }
      const timed = async (call: () => Promise<void>, into: number[]) => {
        const start = performance.now()
        await call()
        into.push(performance.now() - start)
      }
      for (let i = 0; i < WARMUP; i++) {
        await termkeep()
        await tmux.call()
      }
      const ours: number[] = []
      const theirs: number[] = []
      while (ours.length < CALLS) {
        for (let i = 0; i < BLOCK; i++) await timed(termkeep, ours)
        for (let i = 0; i < BLOCK; i++) await timed(tmux.call, theirs)
      }
      const p50 = percentile(ours, 50)
      const base50 = percentile(theirs, 50)
      const ratio = p50 / base50
      const note = `p99 ${percentile(ours, 99).toFixed(1)} ms vs ${percentile(theirs, 99).toFixed(1)} ms; ${CALLS} calls each`
      return [
        { area: 'commands', metric, value: p50, baseline: base50, unit: 'ms', ratio, target: `≤ ${TARGET}×`, met: ratio <= TARGET, note },
      ]
    } catch (error) {
      const note = `not measured: ${String((error as Error).message ?? error).slice(0, 160)}`
      return [{ area: 'commands', metric, value: 0, unit: 'ms', target: `≤ ${TARGET}×`, met: false, note }]
    } finally {
      await tmux.close()
      await stack.close()
    }
  },
}

export default scenario
