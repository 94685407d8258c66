/**
 * MCP benchmark (`npm run bench -- mcp`): `tools/call` of `read_screen` through `/mcp` against
 * `GET …/screen`, the route it calls, on one Node server with a real sidecar and one live
 * terminal: requests/s of each (autocannon, alternated, best of two). Target ≥ 0.5×: a tool call
 * pays the endpoint's token check, a fresh stateless SDK server, the JSON-RPC framing and an
 * internal request that runs the route's own guard and validation again.
 */
import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { compare, rps } from './api.ts'
import { startBenchStack } from './stack.ts'
import type { BenchRow, BenchScenario } from './table.ts'

const METRIC = 'tools/call read_screen vs GET …/screen'
const TARGET = 0.5

/** One JSON-RPC tools/call, as an MCP client POSTs it (stateless: no initialize needed). */
function toolCall(name: string, args: Record<string, unknown>): string {
  return JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } })
}

const scenario: BenchScenario = {
  name: 'mcp',
  async run(): Promise<BenchRow[]> {
    const stack = await startBenchStack('mcp')
    const { dir, base, auth } = stack
    try {
      const json = { ...auth, 'content-type': 'application/json' }
      const ws = join(dir, 'workspace')
      mkdirSync(ws, { recursive: true })
      await fetch(`${base}/v1/workspaces`, { method: 'POST', headers: json, body: JSON.stringify({ path: ws }) })
      await fetch(`${base}/v1/sessions`, { method: 'POST', headers: json, body: JSON.stringify({ id: 'bench', cwd: ws }) })
      const mcp = { ...json, accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-06-18' }
      // A screen with some text on it, made through MCP itself.
      const run = await fetch(`${base}/mcp`, {
        method: 'POST',
        headers: mcp,
        body: toolCall('run_command', { sid: 'bench', tid: 'screen', command: 'seq 1 30' }),
      })
      if (!(await run.text()).includes('"exitCode\\":0')) throw new Error('run_command did not finish')
      // The call measured: checked once here to answer the screen, not an error.
      const body = toolCall('read_screen', { sid: 'bench', tid: 'screen' })
      const once = await (await fetch(`${base}/mcp`, { method: 'POST', headers: mcp, body })).text()
      if (!once.includes('30') || once.includes('"isError":true')) throw new Error(`read_screen answered ${once.slice(0, 300)}`)
      const [viaMcp, viaRoute] = await compare(
        () => rps(`${base}/mcp`, mcp, { method: 'POST', body }),
        () => rps(`${base}/v1/sessions/bench/terminals/screen/screen`, auth),
      )
      const ratio = viaMcp / viaRoute
      return [
        {
          area: 'mcp',
          metric: METRIC,
          value: viaMcp,
          baseline: viaRoute,
          unit: 'req/s',
          ratio,
          target: `≥ ${TARGET}×`,
          met: ratio >= TARGET,
        },
      ]
    } catch (error) {
      const note = `not measured: ${String((error as Error).message ?? error).slice(0, 160)}`
      return [{ area: 'mcp', metric: METRIC, value: 0, unit: 'req/s', target: `≥ ${TARGET}×`, met: false, note }]
    } finally {
      await stack.close()
    }
  },
}

export default scenario
