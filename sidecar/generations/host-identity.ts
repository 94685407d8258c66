/**
 * Which host this sidecar is, among the hosts sharing one database: a stable id kept in the data
 * directory (`host.id`, made once, 0600), a name (TERMKEEP_HOST, else the machine's hostname),
 * the URL the API reaches it at, its version and capacity, and the secret it accepts:
 * TERMKEEP_HOST_SECRET (in a fleet: derived from the fleet secret and this id, common/crypto.ts
 * `deriveHostSecret`, so the host never holds the fleet's), else SIDECAR_SECRET (one host).
 */
import { readFileSync, writeFileSync } from 'node:fs'
import { availableParallelism, hostname, totalmem } from 'node:os'
import { join } from 'node:path'
import { randomId } from '../../common/crypto.ts'
import { ConfigError, type Config } from '../../schema/config.ts'
import { HOST_ID_PATTERN, HOST_NAME_PATTERN } from '../../schema/limits.ts'
import type { HostRegistration } from '../../storage/hosts.ts'

const HOST_ID_FILE = 'host.id'

/** The id this data directory's host has had since its first start (made now if it has none). */
export function hostId(dataDir: string): string {
  const file = join(dataDir, HOST_ID_FILE)
  try {
    const id = readFileSync(file, 'utf8').trim()
    if (HOST_ID_PATTERN.test(id)) return id
    throw new ConfigError(file, 'a host id (1–128 of A-Z a-z 0-9 _ -); remove the file to make a new one', id)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
  }
  const id = randomId('host')
  // `wx`: of two starts racing on a new directory one writes, the other reads what it wrote.
  try {
    writeFileSync(file, `${id}\n`, { flag: 'wx', mode: 0o600 })
    return id
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') return hostId(dataDir)
    throw error
  }
}

/** The machine's hostname as a host name: characters a name may not hold become `-`. */
export function defaultHostName(raw = hostname()): string {
  const name = raw.replace(/[^\w.-]/g, '-').slice(0, 63)
  return HOST_NAME_PATTERN.test(name) ? name : 'host'
}

export interface HostIdentity {
  registration: HostRegistration
  /** The bearer secret this sidecar accepts. */
  secret: string
}

/** Everything this host registers, once it knows the address it listens on. */
export function hostIdentity(config: Config, listening: URL): HostIdentity {
  const id = hostId(config.dataDir)
  const secret = config.hostSecret ?? config.sidecarSecret
  if (!secret) {
    throw new ConfigError(
      'TERMKEEP_HOST_SECRET',
      `required, or SIDECAR_SECRET (termkeep serve generates one); in a fleet, \`termkeep hosts secret ${id}\` where the API runs prints this host's`,
      '',
    )
  }
  return {
    registration: {
      id,
      name: config.hostName ?? defaultHostName(),
      url: config.hostUrl ?? listening.origin,
      version: version(),
      cpus: availableParallelism(),
      memoryBytes: totalmem(),
    },
    secret,
  }
}

function version(): string {
  const manifest = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }
  return manifest.version
}
