/**
 * Cloudflare Workers entry for the API (wrangler.toml `main`). Configuration comes from bindings
 * and secrets (DATABASE_URL, DATABASE_AUTH_TOKEN, SIDECAR_URL, SIDECAR_SECRET, AUTO_MIGRATE); the
 * dependencies are built once per isolate, on the first request, and rebuilt on the next request
 * if that failed (a database that was briefly unreachable must not poison the isolate).
 *
 * `@libsql/client` resolves to its web client here (the `workerd` export condition), so the
 * database must be remote; migrations come bundled (storage/migrate.ts), never from a filesystem.
 */
import type { ExecutionContext, Hono } from 'hono'
import { ConfigError, parseConfig } from '../../schema/config.ts'
import { TermkeepError } from '../../schema/errors.ts'
import { createApp } from '../app.ts'
import type { AppEnv } from '../deps.ts'
import { autoMigrate, wireDeps } from './wiring.ts'

/** Bindings: plain-text vars and secrets are strings; anything else (KV, …) is not configuration. */
type Bindings = Record<string, unknown>

function settings(env: Bindings): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === 'string'))
}

async function build(env: Bindings): Promise<Hono<AppEnv>> {
  const vars = settings(env)
  const config = parseConfig(vars)
  if (!vars.DATABASE_URL || config.databaseUrl.startsWith('file:')) {
    throw new ConfigError(
      'DATABASE_URL',
      'a remote libSQL URL (libsql:, https:, wss:); Workers have no filesystem',
      vars.DATABASE_URL ?? '',
    )
  }
  if (!config.sidecarSecret) {
    throw new ConfigError('SIDECAR_SECRET', 'required: `wrangler secret put SIDECAR_SECRET`', '')
  }
  const deps = await wireDeps(config, { runtime: 'workerd', sidecarSecret: config.sidecarSecret, migrate: autoMigrate(vars, false) })
  return createApp(deps)
}

function startupFailure(error: unknown): Response {
  console.error('termkeep api: start-up failed:', error instanceof ConfigError ? error.message : error)
  const failure =
    error instanceof ConfigError
      ? new TermkeepError('internal/error', error.message)
      : new TermkeepError('database/unavailable', 'the database could not be opened or migrated')
  return Response.json(failure.toBody(), { status: failure.status })
}

let app: Promise<Hono<AppEnv>> | undefined

export default {
  async fetch(request: Request, env: Bindings, ctx: ExecutionContext): Promise<Response> {
    const building = (app ??= build(env))
    let ready: Hono<AppEnv>
    try {
      ready = await building
    } catch (error) {
      if (app === building) app = undefined
      return startupFailure(error)
    }
    return ready.fetch(request, env, ctx)
  },
}
