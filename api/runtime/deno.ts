/**
 * Deno entry for the API, for `deno serve` (see deno.json: `deno task start`). Builds the
 * dependencies from the environment and exports createApp's fetch; nothing else.
 *
 * `@libsql/client` resolves to its native build here (the `deno` export condition), which loads a
 * Node-API addon on import, remote URLs included: serve with `--allow-ffi --allow-sys`.
 */
import { ConfigError, parseConfig } from '../../schema/config.ts'
import { createApp } from '../app.ts'
import { autoMigrate, fileDatabaseDir, wireDeps } from './wiring.ts'

/** The slice of the Deno namespace this file uses, declared here so the Node tsconfig checks it too. */
interface DenoApi {
  env: { toObject(): Record<string, string> }
  mkdirSync(path: string, options: { recursive: boolean }): void
  readTextFileSync(path: string): string
  exit(code: number): never
}
const deno = (globalThis as unknown as { Deno: DenoApi }).Deno

/** SIDECAR_SECRET, else the secret `termkeep serve` generated into the data directory. */
function sidecarSecret(secret: string | undefined, dataDir: string): string {
  if (secret) return secret
  try {
    return deno.readTextFileSync(`${dataDir.replace(/\/+$/, '')}/sidecar.secret`).trim()
  } catch {
    throw new ConfigError('SIDECAR_SECRET', 'required: the secret the sidecar was started with', '')
  }
}

async function main() {
  const env = deno.env.toObject()
  const config = parseConfig(env)
  const dir = fileDatabaseDir(config.databaseUrl)
  if (dir) deno.mkdirSync(dir, { recursive: true })
  const deps = await wireDeps(config, {
    runtime: 'deno',
    sidecarSecret: sidecarSecret(config.sidecarSecret, config.dataDir),
    migrate: autoMigrate(env, true),
  })
  return createApp(deps)
}

const app = await main().catch((error: unknown) => {
  console.error(error instanceof ConfigError ? error.message : error)
  return deno.exit(1)
})

export default { fetch: app.fetch }
