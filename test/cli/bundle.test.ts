/**
 * The CLI runs from a split esbuild bundle of its sources (cli/bin.js, local/bundle.ts): checked
 * by watching what a real `node cli/bin.js` loads (a module-resolution hook writes every URL it
 * resolves), and the bundle cache itself on a small graph of its own: split at each `import()`,
 * each module's `import.meta.url` its source's, reused while its inputs are as they were and
 * rebuilt when one changes.
 */
import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { bundled } from '../../local/bundle.ts'
import { bundleCache, freshBundle, INSTALL_ROOT } from '../../local/fresh-bundle.mjs'
import { BIN } from './run.ts'

const MAIN = fileURLToPath(new URL('../../cli/main.ts', import.meta.url))

/** Runs `node cli/bin.js …args` with a hook recording every module it resolves. */
function loadedBy(args: string[], dir: string): Promise<{ stdout: string; urls: string[] }> {
  const log = join(dir, `resolved-${Date.now()}.txt`)
  const hooks = join(dir, 'hooks.mjs')
  writeFileSync(
    hooks,
    `import { appendFileSync } from 'node:fs'
export async function resolve(specifier, context, next) {
  const found = await next(specifier, context)
  appendFileSync(${JSON.stringify(log)}, found.url + '\\n')
  return found
}`,
  )
  const probe = join(dir, 'probe.mjs')
  writeFileSync(probe, `import { register } from 'node:module'\nregister(${JSON.stringify(pathToFileURL(hooks).href)})\n`)
  return new Promise((resolve, reject) =>
    execFile(process.execPath, ['--import', pathToFileURL(probe).href, BIN, ...args], { encoding: 'utf8' }, (error, stdout) =>
      error ? reject(error) : resolve({ stdout, urls: readFileSync(log, 'utf8').trim().split('\n') }),
    ),
  )
}

describe('the CLI from its bundle', () => {
  let dir: string
  beforeAll(() => {
    dir = mkdtempSync(join(INSTALL_ROOT, 'node_modules', '.cache', 'termkeep-bundle-test-'))
  })
  afterAll(() => rmSync(dir, { recursive: true, force: true }))

  it('runs a command from the bundle, without tsx, loading only that command’s modules', async () => {
    await loadedBy(['--help'], dir) // builds the bundle if the sources changed since the last
    const entry = freshBundle(MAIN)
    expect(entry).toBeDefined()
    const { stdout, urls } = await loadedBy(['--help'], dir)
    expect(stdout).toContain('usage: termkeep')
    expect(urls).toContain(pathToFileURL(entry!).href)
    expect(urls.filter((url) => url.includes('/tsx/') || url.endsWith('.ts'))).toEqual([])
    // Each command's code is a module of its own, which --help does not load (esbuild marks
    // each source in its output with a `// path` line).
    const bundleDir = join(entry!, '..')
    const holding = (source: string) =>
      readdirSync(bundleDir).filter(
        (name) => name.endsWith('.mjs') && readFileSync(join(bundleDir, name), 'utf8').includes(`\n// ${source}\n`),
      )
    for (const command of ['cli/serve.ts', 'cli/attach.ts', 'cli/run.ts']) {
      const [module] = holding(command)
      expect(module, command).toBeDefined()
      expect(urls).not.toContain(pathToFileURL(join(bundleDir, module)).href)
    }
    expect(urls).toContain(pathToFileURL(join(bundleDir, holding('cli/main.ts')[0])).href)
  })

  it('builds a split bundle, reuses it while its inputs are unchanged, and rebuilds it when one changes', async () => {
    const src = join(dir, 'graph')
    mkdirSync(src)
    const entry = join(src, 'entry.ts')
    writeFileSync(entry, `export const load = async () => (await import('./part.ts')).part\nexport const url: string = import.meta.url\n`)
    writeFileSync(join(src, 'part.ts'), `export const part = (where: string = import.meta.url) => 'one ' + where\n`)
    const first = await bundled(entry, { split: true })
    expect(readdirSync(join(first, '..')).filter((name) => name.endsWith('.mjs') && name !== 'entry.mjs').length).toBeGreaterThan(0)
    const one = await import(pathToFileURL(first).href)
    expect(one.url).toBe(pathToFileURL(entry).href)
    expect(await (await one.load())()).toBe(`one ${pathToFileURL(join(src, 'part.ts')).href}`)

    expect(freshBundle(entry)).toBe(first)
    expect(await bundled(entry, { split: true })).toBe(first)

    writeFileSync(join(src, 'part.ts'), `export const part = () => 'two'\n`)
    expect(freshBundle(entry)).toBeUndefined()
    const second = await bundled(entry, { split: true })
    expect(second).not.toBe(first)
    expect(await (await (await import(pathToFileURL(second).href)).load())()).toBe('two')
    expect(JSON.parse(readFileSync(bundleCache(entry).index, 'utf8')).file).toBe(second.slice(bundleCache(entry).cache.length + 1))
  })
})
