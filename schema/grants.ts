/**
 * Grants a token can hold. None implies another: `terminals:control` cannot read output, and
 * `admin` only manages tokens.
 */
export const GRANTS = [
  'workspaces:read',
  'workspaces:write',
  'sessions:write',
  'files:read',
  'terminals:control',
  'terminals:output',
  'terminals:display',
  'terminals:screen',
  'observe:process',
  'observe:files',
  'observe:journal',
  'workflows:run',
  'workflows:read',
  'admin',
] as const

export type Grant = (typeof GRANTS)[number]

export function isGrant(value: string): value is Grant {
  return (GRANTS as readonly string[]).includes(value)
}
