/**
 * The public route table (docs/api.md lists it for readers) as data: method, path template,
 * required grant, and the home that serves it. The authorization matrix and the OpenAPI coverage
 * test iterate it.
 */
import type { Requirement } from '../../api/auth/guard.ts'

export interface RouteRow {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  path: string
  /** null: no token needed. */
  grant: Requirement | null
  home: 'api' | 'display' | 'files'
}

const T = '/v1/sessions/:sid/terminals/:tid'
const F = '/v1/sessions/:sid/files'
const O = `${T}/observation`
const OBSERVE_ANY: Requirement = { anyOf: ['observe:process', 'observe:files', 'observe:journal'] }
/** One POST route per seed method (schema/wire/observation.ts), with its grant. */
const OBSERVATION: RouteRow[] = [
  ...['descendants', 'openFiles', 'environment'].map((op) => ({ path: `${O}/processes/${op}`, grant: 'observe:process' as const })),
  ...[
    'resolveHomeDirectory',
    'resolveDirectoryRelativeToEnvironment',
    'resolveRelativeToEnvironment',
    'resolvePathUnderEnvironment',
    'environmentRelativePath',
    'resolveHomeRelative',
    'resolvePathUnderHome',
    'homeRelativePath',
    'canonicalFile',
    'realpath',
    'stat',
    'listDirectory',
    'read',
    'readJson',
    'readJsonLine',
  ].map((op) => ({ path: `${O}/files/${op}`, grant: 'observe:files' as const })),
].map((row) => ({ method: 'POST', home: 'api', ...row }))
const W = '/v1/sessions/:sid/workflows'

export const ROUTES: RouteRow[] = [
  { method: 'GET', path: '/v1/health', grant: null, home: 'api' },
  { method: 'GET', path: '/openapi.json', grant: null, home: 'api' },
  { method: 'GET', path: '/v1/workspaces', grant: 'workspaces:read', home: 'api' },
  { method: 'POST', path: '/v1/workspaces', grant: 'workspaces:write', home: 'api' },
  { method: 'GET', path: '/v1/workspaces/resolve', grant: 'workspaces:read', home: 'api' },
  { method: 'PATCH', path: '/v1/workspaces/:wid', grant: 'workspaces:write', home: 'api' },
  { method: 'DELETE', path: '/v1/workspaces/:wid', grant: 'workspaces:write', home: 'api' },
  { method: 'POST', path: '/v1/workspaces/:wid/move', grant: 'workspaces:write', home: 'api' },
  { method: 'GET', path: '/v1/workspaces/watch', grant: 'workspaces:read', home: 'api' },
  { method: 'GET', path: '/v1/sessions', grant: 'workspaces:read', home: 'api' },
  { method: 'GET', path: '/v1/hosts', grant: 'workspaces:read', home: 'api' },
  { method: 'GET', path: '/v1/hosts/watch', grant: 'workspaces:read', home: 'api' },
  { method: 'POST', path: '/v1/sessions', grant: 'sessions:write', home: 'api' },
  { method: 'GET', path: '/v1/sessions/:sid', grant: 'workspaces:read', home: 'api' },
  { method: 'PATCH', path: '/v1/sessions/:sid', grant: 'sessions:write', home: 'api' },
  { method: 'GET', path: '/v1/resolve', grant: { anyOf: ['workspaces:read', 'terminals:control', 'terminals:display'] }, home: 'api' },
  { method: 'GET', path: '/v1/find', grant: { anyOf: ['workspaces:read', 'terminals:control', 'terminals:display'] }, home: 'api' },
  { method: 'POST', path: '/v1/workspaces/:wid/sessions/:sid/move', grant: 'workspaces:write', home: 'api' },
  { method: 'POST', path: '/v1/sessions/:sid/archive', grant: 'workspaces:write', home: 'api' },
  { method: 'DELETE', path: '/v1/sessions/:sid/archive', grant: 'workspaces:write', home: 'api' },
  { method: 'GET', path: '/v1/sessions/:sid/terminal-environment', grant: 'terminals:control', home: 'api' },
  { method: 'GET', path: '/v1/sessions/:sid/shells', grant: 'terminals:control', home: 'api' },
  { method: 'GET', path: '/v1/sessions/:sid/terminals', grant: { anyOf: ['terminals:control', 'terminals:display'] }, home: 'api' },
  { method: 'DELETE', path: '/v1/sessions/:sid/terminals', grant: 'terminals:control', home: 'api' },
  { method: 'GET', path: '/v1/sessions/:sid/search', grant: 'terminals:output', home: 'api' },
  { method: 'GET', path: `${T}/search`, grant: 'terminals:output', home: 'api' },
  { method: 'PUT', path: T, grant: 'terminals:control', home: 'api' },
  { method: 'GET', path: T, grant: { anyOf: ['terminals:control', 'terminals:display'] }, home: 'api' },
  { method: 'PATCH', path: T, grant: 'terminals:control', home: 'api' },
  { method: 'DELETE', path: T, grant: 'terminals:control', home: 'api' },
  { method: 'POST', path: `${T}/input`, grant: 'terminals:control', home: 'api' },
  { method: 'POST', path: `${T}/keys`, grant: 'terminals:control', home: 'api' },
  { method: 'POST', path: `${T}/resize`, grant: 'terminals:control', home: 'api' },
  { method: 'GET', path: `${T}/follow`, grant: { allOf: ['terminals:control', 'terminals:output'] }, home: 'api' },
  { method: 'GET', path: `${T}/retain`, grant: 'terminals:control', home: 'api' },
  { method: 'GET', path: `${T}/output`, grant: 'terminals:output', home: 'api' },
  { method: 'GET', path: `${T}/output/watch`, grant: 'terminals:output', home: 'api' },
  { method: 'GET', path: `${T}/output.cast`, grant: 'terminals:output', home: 'api' },
  { method: 'GET', path: `${T}/commands`, grant: { anyOf: ['terminals:output', 'terminals:screen'] }, home: 'api' },
  { method: 'POST', path: `${T}/commands`, grant: { allOf: ['terminals:control', 'terminals:output'] }, home: 'api' },
  { method: 'GET', path: `${T}/commands/watch`, grant: { anyOf: ['terminals:output', 'terminals:screen'] }, home: 'api' },
  { method: 'GET', path: `${T}/commands/:n`, grant: { anyOf: ['terminals:output', 'terminals:screen'] }, home: 'api' },
  { method: 'GET', path: `${T}/commands/:n/output`, grant: 'terminals:output', home: 'api' },
  { method: 'GET', path: `${T}/commands/:n/output.bin`, grant: 'terminals:output', home: 'api' },
  { method: 'GET', path: `${T}/display`, grant: 'terminals:display', home: 'display' },
  { method: 'GET', path: `${T}/scrollback`, grant: 'terminals:display', home: 'display' },
  { method: 'GET', path: `${T}/screen`, grant: 'terminals:screen', home: 'display' },
  { method: 'GET', path: `${T}/screen/watch`, grant: 'terminals:screen', home: 'display' },
  { method: 'GET', path: `${F}/text`, grant: 'files:read', home: 'files' },
  { method: 'GET', path: `${F}/bytes`, grant: 'files:read', home: 'files' },
  { method: 'GET', path: `${F}/all`, grant: 'files:read', home: 'files' },
  { method: 'GET', path: `${F}/related`, grant: 'files:read', home: 'files' },
  { method: 'GET', path: `${F}/stat`, grant: 'files:read', home: 'files' },
  { method: 'GET', path: `${F}/list`, grant: 'files:read', home: 'files' },
  { method: 'GET', path: `${F}/changes`, grant: 'files:read', home: 'files' },
  { method: 'POST', path: '/v1/sessions/:sid/read-text', grant: 'files:read', home: 'files' },
  { method: 'POST', path: '/v1/sessions/:sid/attachments', grant: 'sessions:write', home: 'files' },
  { method: 'POST', path: '/v1/sessions/:sid/tool-results', grant: 'sessions:write', home: 'files' },
  { method: 'POST', path: W, grant: 'workflows:run', home: 'api' },
  { method: 'GET', path: W, grant: 'workflows:read', home: 'api' },
  { method: 'GET', path: `${W}/:rid`, grant: 'workflows:read', home: 'api' },
  { method: 'GET', path: `${W}/:rid/events`, grant: 'workflows:read', home: 'api' },
  { method: 'POST', path: `${W}/:rid/cancel`, grant: 'workflows:run', home: 'api' },
  { method: 'POST', path: '/v1/tokens', grant: 'admin', home: 'api' },
  { method: 'GET', path: '/v1/tokens', grant: 'admin', home: 'api' },
  { method: 'DELETE', path: '/v1/tokens/:id', grant: 'admin', home: 'api' },
  { method: 'GET', path: O, grant: OBSERVE_ANY, home: 'api' },
  ...OBSERVATION,
  { method: 'GET', path: `${O}/files/watchDirectory`, grant: 'observe:files', home: 'api' },
  { method: 'GET', path: `${O}/files/follow`, grant: 'observe:journal', home: 'api' },
  // MCP: any valid token reaches the endpoint; each tool then needs its routes' grants.
  { method: 'POST', path: '/mcp', grant: { allOf: [] }, home: 'api' },
  { method: 'GET', path: '/mcp', grant: { allOf: [] }, home: 'api' },
  { method: 'DELETE', path: '/mcp', grant: { allOf: [] }, home: 'api' },
  // Not in the design table: EventSource tickets (any valid token).
  { method: 'POST', path: '/v1/tickets', grant: { allOf: [] }, home: 'api' },
]

/** `/v1/a/:sid/b` → `/v1/a/{sid}/b`, as OpenAPI spells it. */
export function openApiPath(path: string): string {
  return path.replace(/:(\w+)/g, '{$1}')
}
