/**
 * The tool table against the app it runs on: every tool calls mounted, guarded routes, a token
 * sees a tool exactly when those routes' guards would let it in, inputs are well-formed objects,
 * and docs/mcp.md lists each tool with the grants its routes require.
 */
import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import { createApp } from '../app.ts'
import type { Authority } from '../../storage/authority.ts'
import type { AppDeps } from '../deps.ts'
import { GRANTS, type Grant } from '../../schema/grants.ts'
import { Catalog } from './catalog.ts'
import { TOOLS } from './tools.ts'

// The catalog reads only the app's route table: no database or sidecar is reached.
const app = createApp({ runtime: 'test' } as unknown as AppDeps)
const catalog = new Catalog(app, TOOLS)
const authority = (grants: readonly Grant[]): Authority => ({ tokenId: 't', grants: new Set(grants), sessions: 'all' })

describe('the MCP tool table', () => {
  it('names each tool once, in snake_case, over routes that are mounted and guarded', () => {
    const names = TOOLS.map((t) => t.name)
    expect(new Set(names).size).toBe(names.length)
    for (const tool of TOOLS) {
      expect(tool.name).toMatch(/^[a-z][a-z_]{2,63}$/)
      expect(() => catalog.requirements(tool), tool.name).not.toThrow()
    }
  })

  it('refuses a tool over a route that is not mounted (a tool cannot outlive its route)', () => {
    const ghost = { ...TOOLS[0]!, uses: [{ method: 'GET' as const, path: '/v1/nowhere' }] }
    expect(() => new Catalog(app, [ghost]).visible(authority(GRANTS))).toThrow(/no guarded route is mounted/)
  })

  it('shows a token exactly the tools whose routes its grants pass', () => {
    const names = (grants: Grant[]) =>
      catalog
        .visible(authority(grants))
        .map((t) => t.name)
        .sort()
    expect(names([])).toEqual([])
    expect(names(['terminals:screen'])).toEqual(['list_commands', 'read_screen', 'wait_for'])
    expect(names(['files:read'])).toEqual(['list_directory', 'read_file', 'read_text', 'stat_file'])
    // send_keys writes through the keys route alone (control), with no follow (control + output).
    expect(names(['terminals:control'])).toEqual([
      'close_session',
      'close_terminal',
      'create_terminal',
      'find',
      'list_terminals',
      'rename_terminal',
      'send_keys',
    ])
    expect(names(['terminals:control', 'terminals:output'])).toEqual([
      'close_session',
      'close_terminal',
      'command_output',
      'create_terminal',
      'find',
      'list_commands',
      'list_terminals',
      'read_output',
      'rename_terminal',
      'run_command',
      'run_in_terminal',
      'search_output',
      'search_session',
      'send_keys',
    ])
    // Reading runs is workflows:read; starting and cancelling them workflows:run, as the routes' guards say.
    expect(names(['workflows:read'])).toEqual(['list_workflows', 'workflow_events', 'workflow_status'])
    expect(names(['workflows:run'])).toEqual(['cancel_workflow', 'run_workflow'])
    // The context needs any observe grant; follow is observe:journal alone.
    expect(names(['observe:journal'])).toEqual(['observe_context', 'observe_follow'])
    expect(names(['observe:process'])).toEqual(['observe_context', 'observe_descendants', 'observe_environment', 'observe_open_files'])
    expect(names(['observe:files'])).toHaveLength(16)
    expect(names([...GRANTS])).toHaveLength(TOOLS.length)
  })

  it('gives every tool an object input whose required keys are its properties', () => {
    for (const tool of TOOLS) {
      const { schema } = tool.input
      expect(schema.type, tool.name).toBe('object')
      expect(schema.additionalProperties, tool.name).toBe(false)
      for (const key of schema.required as string[]) expect(Object.keys(schema.properties as object), `${tool.name}.${key}`).toContain(key)
    }
  })

  it("spells the grants a tool needs as the union of its routes' requirements", () => {
    expect(catalog.grants(catalog.find('send_keys')!)).toBe('terminals:control')
    expect(catalog.grants(catalog.find('list_terminals')!)).toBe('terminals:control or terminals:display')
    const events = { method: 'GET' as const, path: '/v1/sessions/:sid/workflows/:rid/events' }
    expect(catalog.routeGrants([events, { method: 'POST', path: '/v1/sessions/:sid/workflows' }])).toBe('workflows:read + workflows:run')
    expect(catalog.permits(events, authority(['workflows:read']))).toBe(true)
    expect(catalog.permits(events, authority(['workflows:run']))).toBe(false)
  })

  it("is documented in docs/mcp.md with each tool's grants", () => {
    const doc = readFileSync(new URL('../../docs/mcp.md', import.meta.url), 'utf8')
    // Cells are padded by the formatter: compare them trimmed.
    const rows = new Map(
      doc
        .split('\n')
        .map((line) => line.split('|').map((cell) => cell.trim()))
        .map((cells) => [cells[1], cells[2]]),
    )
    for (const tool of TOOLS) expect(rows.get(`\`${tool.name}\``), tool.name).toBe(catalog.grants(tool))
  })
})
