/**
 * The three ways the same API is served for the smoke suite, each against the smoke backend's
 * remote database and sidecar: the Node entry in-process, the Deno entry as a real `deno serve`
 * process, and the Workers bundle (`wrangler deploy --dry-run` output) in workerd via Miniflare.
 * Each returns a base URL; the checks in routes.ts only speak HTTP.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { arch, platform, tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRequire } from 'node:module'
import { fileURLToPath } from 'node:url'
import { openStorage } from '../../storage/client.ts'
import { freePort, waitFor } from '../support/ports.ts'
import type { SmokeBackend } from './backend.ts'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))

export interface RunningTarget {
  url: string
  stop(): Promise<void>
}

export async function startNodeTarget(backend: SmokeBackend): Promise<RunningTarget> {
  // Imported here so the Deno and Workers files never load the app into the Node test process.
  const { startNodeApi } = await import('../../api/runtime/node.ts')
  const storage = await openStorage({ url: backend.databaseUrl })
  const api = await startNodeApi({
    storage,
    sidecarUrl: backend.sidecar.url,
    sidecarSecret: backend.sidecar.secret,
    host: '127.0.0.1',
    port: 0,
  })
  return {
    url: api.url,
    stop: async () => {
      await api.close()
      storage.close()
    },
  }
}

// ── Deno ────────────────────────────────────────────────────────────────────

/** The deno binary from the pinned npm `deno` package (its postinstall copy, else the platform package). */
export function denoBinary(): string | undefined {
  const candidates = [
    join(ROOT, 'node_modules/deno/deno'),
    join(ROOT, `node_modules/@deno/${platform()}-${arch()}${platform() === 'linux' ? '-glibc' : ''}/deno`),
  ]
  return candidates.find((path) => existsSync(path))
}

/**
 * The arguments of deno.json's `start` task with the port swapped for `port`, so the test serves
 * the API exactly as `deno task start` does (same permissions, same entry). The task runs
 * `sh -c 'exec …/deno serve … --host "${HOST:-…}" --port "${PORT:-…}" …'`: its deno command is
 * taken from inside the quotes, HOST and PORT filled in for this test.
 */
export function denoStartArgs(port: number): string[] {
  const config = JSON.parse(readFileSync(join(ROOT, 'deno.json'), 'utf8')) as { tasks: { start: string } }
  const task = config.tasks.start.trim()
  const command = /^sh -c '(?:exec )?(.*)'$/.exec(task)?.[1] ?? task
  const [, ...args] = command
    .replace(/"\$\{PORT:-\d+\}"/, String(port))
    .replace(/"\$\{HOST:-([^}]+)\}"/, '127.0.0.1')
    .split(/\s+/)
  const at = args.indexOf('--port')
  if (args[0] !== 'serve' || at < 0 || args[at + 1] !== String(port)) {
    throw new Error(`deno.json start task is not "deno serve … --port N …": ${config.tasks.start}`)
  }
  return args
}

/** Stops a child by pid: SIGTERM, then SIGKILL after a grace period. */
async function stopChild(child: ChildProcess, graceMs = 3000): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return
  const exited = new Promise((resolve) => child.once('exit', resolve))
  child.kill('SIGTERM')
  const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
  await exited
  clearTimeout(timer)
}

/** termkeep's settings blanked (parseConfig reads '' as unset), so the caller's shell cannot leak in. */
/** termkeep's settings blanked, so a child sees only what a test sets (not the runner's own). */
export const UNSET_CONFIG = Object.fromEntries(
  [
    'TERMKEEP_DATA_DIR',
    'DATABASE_URL',
    'DATABASE_AUTH_TOKEN',
    'HOST',
    'PORT',
    'SIDECAR_URL',
    'SIDECAR_SECRET',
    'TERMKEEP_ADMIN_TOKEN',
    'TERMKEEP_FILES_ALLOW_OUTSIDE',
    'AUTO_MIGRATE',
    'TERMKEEP_HOST',
    'TERMKEEP_HOST_URL',
    'TERMKEEP_HOST_SECRET',
    'TERMKEEP_FLEET_SECRET',
  ].map((name) => [name, '']),
)

export async function startDenoTarget(env: Record<string, string>): Promise<RunningTarget> {
  const deno = denoBinary()
  if (!deno) throw new Error('no deno binary in node_modules (npm ci installs it from the pinned deno package)')
  const port = await freePort()
  const child = spawn(deno, denoStartArgs(port), {
    cwd: ROOT,
    env: { ...process.env, ...UNSET_CONFIG, NO_COLOR: '1', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  })
  let output = ''
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()))
  const url = `http://127.0.0.1:${port}`
  try {
    await waitFor(
      async () => {
        if (child.exitCode !== null) throw new Error(`deno exited with ${child.exitCode}`)
        return (await fetch(`${url}/v1/health`)).ok
      },
      60_000,
      'the Deno API',
    )
  } catch (error) {
    await stopChild(child, 0)
    throw new Error(`${String(error)}\n${output}`)
  }
  return { url, stop: () => stopChild(child) }
}

/** `deno check` on the Deno entry: the whole API graph type-checks under Deno. */
export function denoCheck(): { status: number | null; output: string } {
  const result = spawnSync(denoBinary()!, ['check', 'api/runtime/deno.ts'], {
    cwd: ROOT,
    env: { ...process.env, NO_COLOR: '1' },
    encoding: 'utf8',
    timeout: 120_000,
  })
  return { status: result.status, output: `${result.stdout}${result.stderr}` }
}

// ── Workers ─────────────────────────────────────────────────────────────────

/** The workerd binary Miniflare runs (from the platform package `workerd` picks), if installed. */
export function workerdBinary(): string | undefined {
  try {
    const path = (createRequire(import.meta.url)('workerd') as { default: string }).default
    return existsSync(path) ? path : undefined
  } catch {
    return undefined // an unsupported platform: the workerd package throws on import
  }
}

export interface WorkerBundle {
  dir: string
  script: string
  /** esbuild's metafile for the bundle (`--metafile`): every input and its bytes in the output. */
  meta: string
  compatibilityDate: string
  compatibilityFlags: string[]
  remove(): void
}

/**
 * Builds the Worker exactly as a deploy would (`wrangler deploy --dry-run`) into a private
 * directory under the checkout (workerd refuses scripts outside its working directory), so
 * concurrent test runs never share a bundle.
 */
export function buildWorker(): WorkerBundle {
  mkdirSync(join(ROOT, 'dist-worker'), { recursive: true })
  const dir = mkdtempSync(join(ROOT, 'dist-worker', 'smoke-'))
  const result = spawnSync(
    process.execPath,
    [join(ROOT, 'node_modules/wrangler/bin/wrangler.js'), 'deploy', '--dry-run', '--outdir', dir, '--metafile'],
    {
      cwd: ROOT,
      env: { ...process.env, CI: 'true', CLOUDFLARE_CF_FETCH_ENABLED: 'false', WRANGLER_SEND_METRICS: 'false', NO_COLOR: '1' },
      encoding: 'utf8',
      timeout: 120_000,
    },
  )
  if (result.status !== 0) throw new Error(`wrangler deploy --dry-run failed:\n${result.stdout}${result.stderr}`)
  const toml = readFileSync(join(ROOT, 'wrangler.toml'), 'utf8')
  const date = toml.match(/^compatibility_date\s*=\s*"([^"]+)"/m)?.[1]
  const flags = toml.match(/^compatibility_flags\s*=\s*\[([^\]]*)\]/m)?.[1]
  if (!date) throw new Error('wrangler.toml has no compatibility_date')
  return {
    dir,
    script: join(dir, 'workers.js'),
    meta: join(dir, 'bundle-meta.json'),
    compatibilityDate: date,
    compatibilityFlags: [...(flags ?? '').matchAll(/"([^"]+)"/g)].map((m) => m[1]!),
    remove: () => rmSync(dir, { recursive: true, force: true }),
  }
}

export async function startWorkersTarget(bundle: WorkerBundle, bindings: Record<string, string>): Promise<RunningTarget> {
  const { Miniflare } = await import('miniflare')
  const mf = new Miniflare({
    modules: true,
    scriptPath: bundle.script,
    compatibilityDate: bundle.compatibilityDate,
    compatibilityFlags: bundle.compatibilityFlags,
    bindings,
    host: '127.0.0.1',
    port: await freePort(),
  })
  const url = (await mf.ready).origin
  return { url, stop: () => mf.dispose() }
}

/** A scratch data directory for a target (Deno's file: default lives there). */
export function scratchDir(prefix: string): string {
  return mkdtempSync(join(tmpdir(), prefix))
}
