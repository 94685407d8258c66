/**
 * The layering rule, pure: given the import graph and the layer table, every import that runs
 * against it. One finding per offending import, worded for the person who wrote it.
 */
import { builtinModules } from 'node:module'
import type { Import } from './imports.ts'
import { LAYERS, type Layer, type LayerName } from './layers.ts'

export interface Finding {
  file: string
  line: number
  message: string
}

const TEST_FILE = /\.test\.(ts|mts|js|mjs)$/
const NODE_BUILTINS = new Set(builtinModules)

function matches(pattern: string, file: string): boolean {
  if (pattern.endsWith('/') || pattern.endsWith('*')) return file.startsWith(pattern.replace(/\*$/, ''))
  return file === pattern
}

/** The layer a file belongs to: the longest matching path; tests beside the code form their own. */
export function layerOf(file: string, layers: Record<string, Layer> = LAYERS): string | undefined {
  if (TEST_FILE.test(file) && !file.startsWith('test/') && !file.startsWith('bench/')) return 'beside-tests'
  let best: { name: string; length: number } | undefined
  for (const [name, layer] of Object.entries(layers)) {
    for (const pattern of layer.paths) {
      if (matches(pattern, file) && pattern.length > (best?.length ?? -1)) best = { name, length: pattern.length }
    }
  }
  return best?.name
}

/** `hono/streaming` → `hono`, `@scope/pkg/sub` → `@scope/pkg`, `node:fs/promises` → `node:fs`. */
export function packageOf(specifier: string): string {
  const parts = specifier.split('/')
  return specifier.startsWith('@') ? parts.slice(0, 2).join('/') : parts[0]!
}

function isNodeBuiltin(specifier: string): boolean {
  return specifier.startsWith('node:') || NODE_BUILTINS.has(packageOf(specifier))
}

function mayUse(layer: Layer, name: string, target: string): boolean {
  return layer.uses === '*' || name === target || (layer.uses as readonly string[]).includes(target)
}

export function checkLayering(graph: readonly Import[], layers: Record<string, Layer> = LAYERS): Finding[] {
  const findings: Finding[] = []
  const owners = new Map<string, string>()
  for (const [name, layer] of Object.entries(layers)) for (const pkg of layer.owns ?? []) owners.set(pkg, name)
  const placed = new Set<string>()
  for (const edge of graph) {
    const name = layerOf(edge.from, layers)
    const at = { file: edge.from, line: edge.line }
    if (name === undefined) {
      if (!placed.has(edge.from)) findings.push({ ...at, message: 'belongs to no layer: add its folder to test/layering/layers.ts' })
      placed.add(edge.from)
      continue
    }
    const layer = layers[name]!
    for (const refusal of layer.refuses ?? []) {
      if (refusal.pattern.test(edge.to)) findings.push({ ...at, message: `imports ${edge.to}: ${refusal.why}; ${layer.why}` })
    }
    if (edge.local) {
      if (edge.to.startsWith('missing:')) {
        findings.push({ ...at, message: `imports ${edge.to.slice(8)}, which does not exist` })
        continue
      }
      const target = layerOf(edge.to, layers)
      const owner = owners.get(edge.to)
      if (owner !== undefined && owner !== name && layer.uses !== '*')
        findings.push({ ...at, message: `imports ${edge.to}, which only ${owner} may use` })
      if (target === undefined) findings.push({ ...at, message: `imports ${edge.to}, which belongs to no layer` })
      else if (!mayUse(layer, name, target)) {
        findings.push({ ...at, message: `${name} imports ${target} (${edge.to}): ${name} may use ${describeUses(layer)} (${layer.why})` })
      }
      continue
    }
    if (layer.runtime !== 'node' && isNodeBuiltin(edge.to)) {
      findings.push({
        ...at,
        message: `imports ${edge.to}: ${name} runs on ${layer.runtime === 'neutral' ? 'every runtime' : 'a browser'}, without Node`,
      })
    }
    const owner = owners.get(packageOf(edge.to))
    if (owner !== undefined && owner !== name && layer.uses !== '*') {
      findings.push({ ...at, message: `imports ${edge.to}, which only ${owner} may use` })
    }
  }
  return findings
}

function describeUses(layer: Layer): string {
  return layer.uses === '*' ? 'anything' : layer.uses.length === 0 ? 'no other layer' : (layer.uses as readonly string[]).join(', ')
}

export type { LayerName }
