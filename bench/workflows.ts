/**
 * Workflows: what a sub-agent costs beyond its own process. A run of 20 trivial agents (the fake
 * agent of the tests: a Node program that prints its prompt and exits) with concurrency 4, through
 * the whole stack (POST → sidecar → script process → 20 terminals: PTY, journal, emulator, rendered
 * text, close, events in libSQL → the API's event stream until `workflow/end`), against starting
 * the same 20 processes directly with child_process, 4 at a time, in the same run.
 *
 *   overhead per agent = (run wall time − the agents' own time) / 20
 *   baseline per-process cost = direct wall time / 20
 *
 * The agents' own time is the direct wall time of the same processes at the same concurrency (what
 * they take by themselves), so the ratio is (run − direct) / direct. Target ≤ 3×: keeping a
 * terminal per agent (and a script process per run) costs at most three times what starting the
 * agent costs anyway. Each side runs ROUNDS times, interleaved; the median counts.
 */
import { spawn } from 'node:child_process'
import { mkdirSync, realpathSync } from 'node:fs'
import { join } from 'node:path'
import { sessions, workspaces, workspaceSessions } from '../storage/tables.ts'
import { readSse } from '../web/client/sse.ts'
import { startBenchStack } from './stack.ts'
import type { BenchRow, BenchScenario } from './table.ts'

const AGENTS = 20
const CONCURRENCY = 4
const ROUNDS = 5
const TARGET_RATIO = 3
const FAKE_AGENT = new URL('../test/fixtures/fake-agent.mjs', import.meta.url).pathname
const COMMAND = [process.execPath, FAKE_AGENT]
const prompts = Array.from({ length: AGENTS }, (_, i) => `trivial agent ${i + 1}`)

/** The same processes started directly, CONCURRENCY at a time; resolves with the wall time (ms). */
async function direct(): Promise<number> {
  const start = performance.now()
  const queue = [...prompts]
  const worker = async () => {
    for (let prompt = queue.shift(); prompt !== undefined; prompt = queue.shift()) {
      await new Promise<void>((resolve, reject) => {
        const child = spawn(COMMAND[0], [...COMMAND.slice(1), prompt], { stdio: ['ignore', 'pipe', 'ignore'] })
        child.stdout.resume()
        child.once('error', reject)
        child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`agent exited ${code}`))))
      })
    }
  }
  await Promise.all(Array.from({ length: CONCURRENCY }, worker))
  return performance.now() - start
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]

const scenario: BenchScenario = {
  name: 'workflows',
  async run(): Promise<BenchRow[]> {
    const stack = await startBenchStack('workflows', undefined, {
      sidecarEnv: { TERMKEEP_AGENTS: JSON.stringify({ default: { command: COMMAND, prompt: 'argument' } }) },
    })
    try {
      const root = join(realpathSync(stack.dir), 'ws')
      mkdirSync(root)
      await stack.storage.db.insert(workspaces).values({ id: 'w', path: root, title: 'ws', position: 1 })
      await stack.storage.db.insert(sessions).values({ id: 's', cwd: root })
      await stack.storage.db.insert(workspaceSessions).values({ workspaceId: 'w', sessionId: 's', position: 1 })
      const headers = stack.auth
      const base = stack.base
      const script = `return (await parallel(input, (p) => agent(p))).filter((text) => text !== null).length`
      /** One run through the API; resolves with its wall time (ms) once its end event arrived. */
      const viaTermkeep = async (): Promise<number> => {
        const start = performance.now()
        const response = await fetch(`${base}/v1/sessions/s/workflows`, {
          method: 'POST',
          headers: { ...headers, 'content-type': 'application/json' },
          body: JSON.stringify({ script, input: prompts, concurrency: CONCURRENCY }),
        })
        if (response.status !== 201) throw new Error(`bench run refused: ${response.status} ${await response.text()}`)
        const { run } = (await response.json()) as { run: { id: string } }
        const events = await fetch(`${base}/v1/sessions/s/workflows/${run.id}/events`, { headers })
        for await (const event of readSse(events.body!)) {
          if (event.event !== 'workflow/end') continue
          const { result } = JSON.parse(event.data)
          if (result.value !== AGENTS) throw new Error(`bench run ended ${JSON.stringify(result)}`)
          return performance.now() - start
        }
        throw new Error('the event stream ended without workflow/end')
      }
      await direct() // warm both: the OS page cache, the sidecar's workers
      await viaTermkeep()
      const runs: number[] = []
      const directs: number[] = []
      for (let round = 0; round < ROUNDS; round++) {
        directs.push(await direct())
        runs.push(await viaTermkeep())
      }
      const run = median(runs)
      const own = median(directs)
      const overhead = (run - own) / AGENTS
      const baseline = own / AGENTS
      return [
        {
          area: 'workflows',
          metric: 'overhead per sub-agent beyond its own process',
          value: overhead,
          baseline,
          unit: 'ms',
          ratio: overhead / baseline,
          target: `≤ ${TARGET_RATIO}× child_process per process`,
          met: overhead / baseline <= TARGET_RATIO,
          note: `${AGENTS} agents, concurrency ${CONCURRENCY}; run ${run.toFixed(0)} ms vs direct ${own.toFixed(0)} ms, median of ${ROUNDS}`,
        },
      ]
    } finally {
      await stack.close()
    }
  },
}

export default scenario
