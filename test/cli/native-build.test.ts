/**
 * Running the CLI never rebuilds node-pty, and the install step never makes its build worse: all
 * under an empty HOME (no node-gyp header cache, no ~/.npmrc) with every network path pointed at a
 * closed port, as a fresh user, a container or CI has it. The install step runs on a copy of
 * node-pty (built, rebuilt and failed there); the CLI and `npx` run in this checkout and must
 * leave its build exactly as it was.
 */
import { execFile } from 'node:child_process'
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { sourceStamp, spawnsTerminal } from '../../scripts/native-build.ts'
import { offlineEnv } from './run.ts'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const NODE_PTY = join(ROOT, 'node_modules', 'node-pty')
const SCRIPT = join(ROOT, 'scripts', 'native-build.ts')

interface Run {
  code: number
  stdout: string
  stderr: string
}

function run(file: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { cwd, env, timeout: 120_000 }, (error, stdout, stderr) =>
      resolve({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
    )
  })
}

/** The build's one file that matters, by identity: a rebuild or a removal changes it. */
function buildIdentity(pkg: string): string {
  const stat = statSync(join(pkg, 'build', 'Release', 'pty.node'))
  return `${stat.ino}:${stat.mtimeMs}:${stat.size}`
}

describe('the CLI and the install step under an empty HOME, offline', () => {
  let home: string
  let scratch: string
  let env: NodeJS.ProcessEnv

  /** A copy of node-pty (and the header-only node-addon-api its build resolves beside it). */
  const copyOfNodePty = (name: string, withBuild: boolean): string => {
    const modules = join(scratch, name, 'node_modules')
    mkdirSync(modules, { recursive: true })
    cpSync(join(ROOT, 'node_modules', 'node-addon-api'), join(modules, 'node-addon-api'), { recursive: true })
    const pkg = join(modules, 'node-pty')
    cpSync(NODE_PTY, pkg, { recursive: true, filter: (source) => withBuild || !source.startsWith(join(NODE_PTY, 'build')) })
    return pkg
  }
  const installStep = (pkg: string, extra: NodeJS.ProcessEnv = {}) =>
    run(process.execPath, ['--import', 'tsx', SCRIPT, pkg], { ...env, ...extra })

  beforeAll(() => {
    home = mkdtempSync(join(tmpdir(), 'termkeep-empty-home-'))
    scratch = mkdtempSync(join(tmpdir(), 'termkeep-native-'))
    env = offlineEnv(home)
  })
  afterAll(() => {
    rmSync(home, { recursive: true, force: true })
    rmSync(scratch, { recursive: true, force: true })
  })

  it('the install step rebuilds neither in npm nor by hand: package.json runs the idempotent script', () => {
    const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts as Record<string, string>
    expect(scripts.postinstall).toContain('scripts/native-build.ts')
    expect(scripts.postinstall).not.toMatch(/npm rebuild|node-gyp/)
    // This checkout was installed by that step: its build is stamped with the current sources.
    expect(readFileSync(join(NODE_PTY, 'build', 'termkeep-build.json'), 'utf8')).toBe(sourceStamp(NODE_PTY))
  })

  it('./termkeep (the documented form) runs no lifecycle script: the build is untouched and still spawns', async () => {
    const before = buildIdentity(NODE_PTY)
    const help = await run(join(ROOT, 'termkeep'), ['--help'], env)
    expect(help.code, help.stderr).toBe(0)
    expect(help.stdout).toMatch(/^usage: termkeep <command>/)
    const failing = await run(join(ROOT, 'termkeep'), ['ls'], env)
    expect(failing.code).toBe(1)
    expect(failing.stderr).toContain('no token')
    expect(buildIdentity(NODE_PTY)).toBe(before)
    expect(spawnsTerminal(NODE_PTY)).toBe(true)
  })

  it('npx termkeep (npm links the project and runs its postinstall) keeps the build too', async () => {
    const before = buildIdentity(NODE_PTY)
    const help = await run('npx', ['--no-install', 'termkeep', '--help'], env)
    expect(help.code, help.stderr).toBe(0)
    expect(help.stdout).toMatch(/^usage: termkeep <command>/)
    expect(buildIdentity(NODE_PTY)).toBe(before)
    expect(spawnsTerminal(NODE_PTY)).toBe(true)
  })

  it('npm link (into a scratch prefix) puts a working termkeep on PATH and keeps the build', async () => {
    const before = buildIdentity(NODE_PTY)
    const prefix = join(scratch, 'prefix')
    const linked = await run('npm', ['link'], { ...env, npm_config_prefix: prefix })
    expect(linked.code, linked.stdout + linked.stderr).toBe(0)
    const help = await run(join(prefix, 'bin', 'termkeep'), ['--help'], env, scratch)
    expect(help.code, help.stderr).toBe(0)
    expect(help.stdout).toMatch(/^usage: termkeep <command>/)
    expect(buildIdentity(NODE_PTY)).toBe(before)
    expect(spawnsTerminal(NODE_PTY)).toBe(true)
  })

  it('keeps a good build: a second run checks it and compiles nothing', async () => {
    const pkg = copyOfNodePty('kept', true)
    const before = buildIdentity(pkg)
    const result = await installStep(pkg)
    expect(result.code, result.stdout + result.stderr).toBe(0)
    expect(result.stdout).toContain('kept')
    expect(buildIdentity(pkg)).toBe(before)
    expect(spawnsTerminal(pkg)).toBe(true)
  })

  it('a failed rebuild removes nothing: the previous build stays and still spawns', async () => {
    const pkg = copyOfNodePty('failed', true)
    rmSync(join(pkg, 'build', 'termkeep-build.json')) // as after node-pty's own (unpatched) build
    const before = buildIdentity(pkg)
    // No headers anywhere: node-gyp would have to download them, and the network is closed.
    const result = await installStep(pkg, { npm_config_nodedir: join(scratch, 'no-headers-here') })
    expect(result.code).toBe(1)
    expect(result.stdout).toContain('the build failed')
    expect(result.stdout).toContain('the previous build is kept and spawns terminals')
    expect(buildIdentity(pkg)).toBe(before)
    expect(spawnsTerminal(pkg)).toBe(true)
  })

  it('with no build at all, builds one offline from the headers node was installed with, in a copy swapped in once it spawns', async () => {
    const pkg = copyOfNodePty('fresh', false)
    expect(spawnsTerminal(pkg)).toBe(false)
    const result = await installStep(pkg)
    expect(result.code, result.stdout + result.stderr).toBe(0)
    expect(result.stdout).toContain('built, checked and put in place')
    expect(readFileSync(join(pkg, 'build', 'termkeep-build.json'), 'utf8')).toBe(sourceStamp(pkg))
    expect(spawnsTerminal(pkg)).toBe(true)
    const again = await installStep(pkg)
    expect(again.stdout).toContain('kept')
  })
})
