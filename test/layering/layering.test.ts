/**
 * The layering holds by itself (docs/architecture.md, "Layers"): every import of every file obeys
 * the layer table (test/layering/layers.ts), and the layers that must run without Node compile
 * without Node types. Import circles are Biome's (noImportCycles, in `npm test`).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, normalize } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { type Import, importGraph, importsOf } from './imports.ts'
import { LAYERS, type Runtime } from './layers.ts'
import { checkLayering, layerOf } from './rules.ts'

const ROOT = normalize(join(dirname(fileURLToPath(import.meta.url)), '../..'))

describe('the tree', () => {
  it('has no import against the layering', () => {
    const findings = checkLayering(importGraph(ROOT))
    expect(findings.map((f) => `${f.file}:${f.line} ${f.message}`)).toEqual([])
  })

  it('places every source file in a layer', () => {
    const unplaced = [...new Set(importGraph(ROOT).map((edge) => edge.from))].filter((file) => layerOf(file) === undefined)
    expect(unplaced).toEqual([])
  })
})

const edge = (from: string, to: string, local: boolean): Import => ({ from, to, local, typeOnly: false, line: 1 })

describe('the rule', () => {
  const cases: [string, Import, RegExp][] = [
    ['a peer importing the other', edge('sidecar/x.ts', 'api/y.ts', true), /sidecar imports api/],
    ['the API importing the sidecar', edge('api/x.ts', 'sidecar/y.ts', true), /api imports sidecar/],
    ['a contract importing storage', edge('schema/x.ts', 'storage/terminals.ts', true), /contracts imports storage/],
    ['shared code importing a client', edge('common/x.ts', 'web/client/api.ts', true), /common imports web/],
    ['the page importing the API', edge('web/page/x.ts', 'api/y.ts', true), /web imports api/],
    ['a query outside storage', edge('api/x.ts', 'drizzle-orm', false), /only storage may use/],
    ['a table outside storage', edge('sidecar/x.ts', 'storage/tables.ts', true), /only storage may use/],
    ['node: in a neutral layer', edge('common/x.ts', 'node:fs', false), /every runtime, without Node/],
    ['a Node built-in without the prefix', edge('storage/x.ts', 'fs/promises', false), /without Node/],
    ['node: in the page', edge('web/page/x.ts', 'node:path', false), /a browser, without Node/],
    ['the neutral API importing Node-only storage', edge('api/x.ts', 'storage/node/free-space.ts', true), /api imports storage-node/],
    ['node-pty outside the keeper', edge('sidecar/x.ts', 'node-pty', false), /only keeper may use/],
    ['the sidecar importing the keeper', edge('sidecar/x.ts', 'keeper/terminals.ts', true), /sidecar imports keeper/],
    ['the keeper importing the sidecar', edge('keeper/x.ts', 'sidecar/journal/journal.ts', true), /keeper imports sidecar/],
    ['a test beside the code starting a sidecar', edge('api/x.test.ts', 'test/support/sidecar.ts', true), /starts a sidecar/],
    ['a test beside the code starting a process', edge('web/x.test.ts', 'node:child_process', false), /another process/],
    ['a file in no layer', edge('elsewhere/x.ts', 'schema/errors.ts', true), /belongs to no layer/],
    ['an import of a missing file', edge('api/x.ts', 'missing:api/gone.ts', true), /does not exist/],
  ]
  it.each(cases)('refuses %s', (_, imported, message) => {
    const findings = checkLayering([imported])
    expect(findings).toHaveLength(1)
    expect(findings[0]!.message).toMatch(message)
  })

  it.each([
    ['the sidecar importing storage', edge('sidecar/x.ts', 'storage/terminals.ts', true)],
    ['the API importing shared code', edge('api/x.ts', 'common/sse.ts', true)],
    ['the CLI importing the sidecar', edge('cli/serve.ts', 'sidecar/data-dir.ts', true)],
    ['the sidecar and the keeper importing the host code they share', edge('sidecar/x.ts', 'local/keeper/client.ts', true)],
    ['the keeper importing the journal writer', edge('keeper/x.ts', 'local/journal/writer.ts', true)],
    ['a test under test/ starting a sidecar', edge('test/x.test.ts', 'test/support/sidecar.ts', true)],
    ['storage importing drizzle', edge('storage/x.ts', 'drizzle-orm', false)],
    ['the Node API entry importing node:http', edge('api/runtime/node-server.ts', 'node:http', false)],
  ])('allows %s', (_, imported) => expect(checkLayering([imported])).toEqual([]))
})

describe('import extraction', () => {
  const dir = mkdtempSync(join(tmpdir(), 'termkeep-layering-'))
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('counts type imports, re-exports, import() in code and types, and worker URLs', () => {
    mkdirSync(join(dir, 'a'))
    for (const name of ['b', 'c', 'd', 'e', 'f', 'w']) writeFileSync(join(dir, 'a', `${name}.ts`), 'export {}\n')
    writeFileSync(
      join(dir, 'a/main.ts'),
      [
        "import type { B } from './b.ts'",
        "export * from './c.ts'",
        "export type { D } from './d.ts'",
        "const e = await import('./e.ts')",
        "type F = import('./f.ts').F",
        "const worker = new URL('./w.ts', import.meta.url)",
        "const data = new URL('../docs/x.md', import.meta.url)",
        "import { gone } from './gone.ts'",
        "import { v } from 'valibot'",
      ].join('\n'),
    )
    const found = importsOf(dir, 'a/main.ts').map((i) => [i.to, i.typeOnly, i.line])
    expect(found).toEqual([
      ['a/b.ts', true, 1],
      ['a/c.ts', false, 2],
      ['a/d.ts', true, 3],
      ['a/e.ts', false, 4],
      ['a/f.ts', true, 5],
      ['a/w.ts', false, 6],
      ['missing:a/gone.ts', false, 8],
      ['valibot', false, 9],
    ])
  })
})

/** tsconfig files allow comments; these hold no `//` inside strings. */
const tsconfig = (name: string) =>
  JSON.parse(readFileSync(join(ROOT, name), 'utf8').replace(/^\s*\/\/.*$/gm, '')) as {
    compilerOptions: { lib: string[]; types: string[] }
    include: string[]
    exclude: string[]
  }

const RANK: Record<Runtime, number> = { neutral: 0, browser: 1, node: 2 }
const RUNTIME_CONFIGS: Record<Exclude<Runtime, 'node'>, string> = { neutral: 'tsconfig.neutral.json', browser: 'tsconfig.browser.json' }
const under = (path: string, entries: readonly string[]) =>
  entries.some((e) => path === e || path.startsWith(`${e}/`) || (path.startsWith(e.replace(/\*$/, '')) && e.endsWith('*')))

describe('the runtime tsconfigs', () => {
  it.each(Object.entries(RUNTIME_CONFIGS))('%s: compiles its layers with no Node types, and no other layer', (runtime, name) => {
    const config = tsconfig(name)
    expect(config.compilerOptions.types).toEqual([])
    expect(config.compilerOptions.lib.some((lib) => lib.startsWith('dom'))).toBe(runtime === 'browser')
    for (const [layer, { paths, runtime: its }] of Object.entries(LAYERS)) {
      for (const path of paths.map((p) => p.replace(/\/$/, ''))) {
        const compiled = under(path, config.include) && !under(path, config.exclude)
        if (its === runtime) expect(compiled, `${layer}: ${path} in ${name}`).toBe(true)
        // Code that may use more (the DOM, Node) stays out of a config that gives less.
        else if (RANK[its] > RANK[runtime as Runtime]) expect(compiled, `${layer}: ${path} left out of ${name}`).toBe(false)
      }
    }
  })

  it('are compiled by npm test', () => {
    const test = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: Record<string, string> }).scripts.typecheck
    for (const name of Object.values(RUNTIME_CONFIGS)) expect(test).toContain(`tsc -p ${name}`)
  })
})
