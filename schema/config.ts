/**
 * The one configuration module. It reads a plain record (process.env on Node and Deno, bindings
 * on Workers), validates every setting with valibot and fails with a one-line message that names
 * the variable and what is allowed. Pure: no filesystem, no process.
 */
import * as v from 'valibot'
import { HOST_NAME_PATTERN } from './limits.ts'

export interface Config {
  dataDir: string
  databaseUrl: string
  databaseAuthToken: string | undefined
  host: string
  port: number
  sidecarUrl: string
  sidecarSecret: string | undefined
  /** TERMKEEP_HOST: this host's name among the hosts on one database (default: the hostname). */
  hostName: string | undefined
  /** TERMKEEP_HOST_URL: where the API reaches this host's sidecar (a tunnel's URL; default: the
   * address it listens on). */
  hostUrl: string | undefined
  /** TERMKEEP_HOST_SECRET: this host's own sidecar secret, derived from the fleet's (`termkeep
   * hosts secret`), so the host never holds the fleet secret; unset: SIDECAR_SECRET. */
  hostSecret: string | undefined
  /** TERMKEEP_FLEET_SECRET (the API): each host's sidecar secret is derived from it and the host
   * id; unset: every host is reached with SIDECAR_SECRET, as one host always was. */
  fleetSecret: string | undefined
  adminToken: string | undefined
  filesAllowOutside: boolean
  /** TERMKEEP_ALLOWED_ORIGINS: browser origins (`https://host[:port]`) the API answers besides
   * loopback ones and its own page's (api/auth/origin.ts). */
  allowedOrigins: string[]
  /** TERMKEEP_ALLOWED_HOSTS: Host names (`host` or `host:port`) requests may name besides loopback
   * ones; unset: loopback only where the API listens on loopback, any elsewhere. */
  allowedHosts: string[] | undefined
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    readonly allowed: string,
    readonly got: string,
  ) {
    super(`termkeep: invalid ${variable}=${JSON.stringify(got)}: ${allowed}`)
    this.name = 'ConfigError'
  }
}

const DATABASE_SCHEMES = ['file:', 'libsql:', 'http:', 'https:', 'ws:', 'wss:']
const MIN_SECRET_CHARS = 16

const port = v.pipe(v.string(), v.regex(/^\d{1,5}$/), v.transform(Number), v.integer(), v.minValue(1), v.maxValue(65535))
const nonEmpty = v.pipe(v.string(), v.trim(), v.minLength(1))
const secret = v.pipe(v.string(), v.regex(/^[\x21-\x7e]+$/), v.minLength(MIN_SECRET_CHARS))
const databaseUrl = v.pipe(
  v.string(),
  v.check((s) => DATABASE_SCHEMES.some((scheme) => s.startsWith(scheme)) && s.length > 5),
)
const httpUrl = v.pipe(
  v.string(),
  v.url(),
  v.check((s) => /^https?:\/\//.test(s)),
)
const hostName = v.pipe(v.string(), v.regex(HOST_NAME_PATTERN))
const flag = v.pipe(
  v.picklist(['0', '1', 'true', 'false']),
  v.transform((s) => s === '1' || s === 'true'),
)

/** A comma-separated list, each entry checked by `entry` (and trimmed; empty entries dropped). */
const listOf = (entry: (s: string) => boolean) =>
  v.pipe(
    v.string(),
    v.transform((s) =>
      s
        .split(',')
        .map((part) => part.trim())
        .filter((part) => part !== ''),
    ),
    v.check((parts) => parts.length > 0 && parts.every(entry)),
  )
/** An origin exactly as a browser sends it: scheme, host, port only. */
const isOrigin = (s: string) => {
  try {
    return /^https?:$/.test(new URL(s).protocol) && new URL(s).origin === s
  } catch {
    return false
  }
}
const isHost = (s: string) => /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+)(:\d{1,5})?$/.test(s)

type Env = Readonly<Record<string, string | undefined>>

function setting<T>(env: Env, name: string, schema: v.GenericSchema<string, T>, allowed: string): T | undefined {
  const raw = env[name]
  if (raw === undefined || raw === '') return undefined
  const result = v.safeParse(schema, raw)
  if (!result.success) throw new ConfigError(name, allowed, raw)
  return result.output
}

/** Validates the environment; throws `ConfigError` (one line) for the first bad value. */
export function parseConfig(env: Env): Config {
  const dataDir = setting(env, 'TERMKEEP_DATA_DIR', nonEmpty, 'a directory path') ?? './data'
  const databaseUrl_ =
    setting(env, 'DATABASE_URL', databaseUrl, `a libSQL URL starting with ${DATABASE_SCHEMES.join(' ')}`) ??
    `file:${dataDir.replace(/\/+$/, '')}/termkeep.db`
  return {
    dataDir,
    databaseUrl: databaseUrl_,
    databaseAuthToken: setting(env, 'DATABASE_AUTH_TOKEN', nonEmpty, 'a non-empty token'),
    host: setting(env, 'HOST', nonEmpty, 'a host name or address to listen on') ?? '127.0.0.1',
    port: setting(env, 'PORT', port, 'an integer from 1 to 65535') ?? 8787,
    sidecarUrl: (setting(env, 'SIDECAR_URL', httpUrl, 'an http:// or https:// URL of the sidecar') ?? 'http://127.0.0.1:8788').replace(
      /\/+$/,
      '',
    ),
    sidecarSecret: setting(env, 'SIDECAR_SECRET', secret, `at least ${MIN_SECRET_CHARS} printable characters, no spaces`),
    hostName: setting(env, 'TERMKEEP_HOST', hostName, '1–63 of A-Z a-z 0-9 _ . -'),
    hostUrl: setting(env, 'TERMKEEP_HOST_URL', httpUrl, 'an http:// or https:// URL the API reaches this sidecar at')?.replace(/\/+$/, ''),
    hostSecret: setting(env, 'TERMKEEP_HOST_SECRET', secret, `at least ${MIN_SECRET_CHARS} printable characters, no spaces`),
    fleetSecret: setting(env, 'TERMKEEP_FLEET_SECRET', secret, `at least ${MIN_SECRET_CHARS} printable characters, no spaces`),
    adminToken: setting(env, 'TERMKEEP_ADMIN_TOKEN', secret, `at least ${MIN_SECRET_CHARS} printable characters, no spaces`),
    filesAllowOutside: setting(env, 'TERMKEEP_FILES_ALLOW_OUTSIDE', flag, 'one of 0, 1, true, false') ?? false,
    allowedOrigins:
      setting(
        env,
        'TERMKEEP_ALLOWED_ORIGINS',
        listOf(isOrigin),
        'comma-separated origins such as https://termkeep.example.com:8443 (no path)',
      ) ?? [],
    allowedHosts: setting(env, 'TERMKEEP_ALLOWED_HOSTS', listOf(isHost), 'comma-separated host names, each optionally with :port'),
  }
}
