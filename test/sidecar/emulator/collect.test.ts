/**
 * A worker's heap is collected once after screens leave it (collect.ts): in a real Node process
 * started with the sidecar's flags, garbage dropped before a burst of `collectSoon` calls is
 * finalized (a real full GC ran, once for the burst); without `--expose-gc` nothing runs.
 */
import { execFileSync } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { afterAll, describe, expect, it } from 'vitest'
import { SIDECAR_MALLOC_ENV, SIDECAR_NODE_FLAGS, sidecarEnv } from '../../../sidecar/node-flags.ts'

const dir = mkdtempSync(join(tmpdir(), 'termkeep-collect-'))
const script = join(dir, 'probe.mts')
writeFileSync(
  script,
  `import * as collect from ${JSON.stringify(new URL('../../../sidecar/emulator/collect.ts', import.meta.url).pathname)}
let finalized = false
const registry = new FinalizationRegistry(() => (finalized = true))
;(() => {
  // A released screen in miniature: many small cell buffers, unreachable once this returns.
  const rows = Array.from({ length: 2000 }, () => new Uint32Array(240))
  registry.register(rows, 'rows')
})()
for (let i = 0; i < 5; i++) collect.collectSoon(20)
const started = Date.now()
while (!finalized && Date.now() - started < 3000) await new Promise((r) => setTimeout(r, 20))
process.stdout.write(JSON.stringify({ finalized, collections: collect.collections }))
`,
)

// A flood on the main thread: its buffers (external memory) come and go, its V8 heap hardly grows.
// Counted with external memory, that forces collections; counted without (the main thread's
// revisions, display/persist.ts), it does not.
const flood = join(dir, 'flood.mts')
writeFileSync(
  flood,
  `import * as collect from ${JSON.stringify(new URL('../../../sidecar/emulator/collect.ts', import.meta.url).pathname)}
const external = process.argv[2] === 'external'
let kept = []
for (let i = 0; i < 30; i++) {
  kept = Array.from({ length: 8 }, () => Buffer.alloc(1024 * 1024, i))
  collect.collectAfterWork({ external })
  await new Promise((r) => setTimeout(r, 100))
}
await new Promise((r) => setTimeout(r, 1500))
process.stdout.write(JSON.stringify({ collections: collect.collections, kept: kept.length }))
`,
)

function probe(flags: readonly string[]): { finalized: boolean; collections: number } {
  return JSON.parse(execFileSync(process.execPath, [...flags, '--import', 'tsx', script], { encoding: 'utf8' }))
}

afterAll(() => rmSync(dir, { recursive: true, force: true }))

describe('collectSoon', () => {
  it('runs one full collection for a burst of closes, with the sidecar flags', () => {
    expect(SIDECAR_NODE_FLAGS).toContain('--expose-gc')
    expect(probe(SIDECAR_NODE_FLAGS)).toEqual({ finalized: true, collections: 1 })
  })

  it("counts only V8's heap when asked: a flood's buffers force no collection then", () => {
    const run = (mode: string) =>
      JSON.parse(execFileSync(process.execPath, [...SIDECAR_NODE_FLAGS, '--import', 'tsx', flood, mode], { encoding: 'utf8' })).collections
    expect(run('external')).toBeGreaterThan(0)
    expect(run('heap')).toBe(0)
  })

  it('does nothing without --expose-gc', () => {
    expect(probe([]).collections).toBe(0)
  })
})

describe('sidecarEnv', () => {
  it("puts glibc's malloc settings under the launcher's environment, whose own values win", () => {
    expect(sidecarEnv({ PATH: '/bin' })).toMatchObject({ PATH: '/bin', ...SIDECAR_MALLOC_ENV })
    expect(sidecarEnv({ MALLOC_ARENA_MAX: '8' }).MALLOC_ARENA_MAX).toBe('8')
  })
})
