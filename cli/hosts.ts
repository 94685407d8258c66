/**
 * `termkeep hosts`: the hosts (machines) the server reaches, whether each is up. Three local forms
 * bootstrap and rotate a host (docs/operations.md): `hosts id` prints this data directory's host
 * id (made now if it has none); where the API runs, `hosts secret <id>` prints that host's sidecar
 * secret, derived from TERMKEEP_FLEET_SECRET, the id and the host's secret epoch in the database,
 * and `hosts rotate <id>` moves that epoch forward and prints the new secret (the old one stops
 * opening the host; no other host's changes).
 */
import { parseArgs } from 'node:util'
import { deriveHostSecret } from '../common/crypto.ts'
import { HOST_ID_PATTERN } from '../schema/limits.ts'
import { type Config, parseConfig } from '../schema/config.ts'
import { printable } from '../schema/wire/common.ts'
import type { Host } from '../schema/wire/hosts.ts'
import { ensureDataDir } from '../sidecar/data-dir.ts'
import { hostId } from '../sidecar/generations/host-identity.ts'
import { hostSecretEpoch, rotateHostSecret } from '../storage/hosts.ts'
import { openServerDatabase } from './database.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { CommandError, exactArgs, HELP_OPTION, JSON_OPTION, printedHelp, printJson, UsageError } from './usage.ts'

const USAGE = `usage: termkeep hosts [--json] | hosts id | hosts secret <host-id> | hosts rotate <host-id>

  Lists the hosts (machines) the server reaches: name, id, whether it is up, version, capacity,
  the URL the API reaches it at.

  id                        this machine's host id (TERMKEEP_DATA_DIR/host.id, made if missing)
  secret <host-id>          that host's sidecar secret (TERMKEEP_HOST_SECRET), derived from
                            TERMKEEP_FLEET_SECRET and the host's secret epoch in the database
                            (DATABASE_URL); run it where the API runs
  rotate <host-id>          a new secret for that host (its id and every other host's secret
                            stay): prints it; the API uses it at once, so restart the host with it
  --json                    {hosts: [...]} as GET /v1/hosts answers
${REMOTE_USAGE}`

export async function hostsCommand(args: string[], out: NodeJS.WritableStream = process.stdout): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { ...REMOTE_OPTIONS, ...HELP_OPTION, ...JSON_OPTION },
    allowPositionals: true,
  })
  if (printedHelp(values, USAGE, out)) return 0
  const [sub, ...rest] = positionals
  if (sub === 'id') {
    exactArgs(rest, [], 'hosts id')
    const config = parseConfig(process.env)
    ensureDataDir(config.dataDir)
    out.write(`${hostId(config.dataDir)}\n`)
    return 0
  }
  if (sub === 'secret' || sub === 'rotate') {
    const [id] = exactArgs(rest, ['host-id'], `hosts ${sub}`)
    if (!HOST_ID_PATTERN.test(id!)) throw new UsageError(`termkeep: ${JSON.stringify(id)} is not a host id (termkeep hosts lists them)`)
    out.write(`${await hostSecret(parseConfig(process.env), id!, sub)}\n`)
    return 0
  }
  exactArgs(positionals, [], 'hosts')
  const hosts = await remoteClient(values).hosts()
  if (values.json) {
    printJson(out, { hosts })
    return 0
  }
  if (hosts.length === 0) out.write('no hosts yet (a sidecar registers its host when it starts)\n')
  for (const host of hosts) out.write(`${line(host)}\n`)
  return 0
}

function line(host: Host): string {
  const memory = `${Math.round(host.capacity.memoryBytes / 2 ** 30)} GiB`
  return `${printable(host.name)}  ${host.id}  ${host.up ? 'up' : host.starting ? 'starting' : 'down'}  v${printable(host.version)}  ${host.capacity.cpus} cpus ${memory}  ${printable(host.url)}`
}

/** The host's secret at its current epoch, after moving the epoch forward when rotating. */
async function hostSecret(config: Config, id: string, sub: 'secret' | 'rotate'): Promise<string> {
  const { fleetSecret } = config
  if (!fleetSecret) throw new CommandError(`termkeep: hosts ${sub} needs TERMKEEP_FLEET_SECRET, the secret the API holds`)
  // The epoch lives in the fleet's database: a file no server reads would give a stale secret.
  const storage = await openServerDatabase(config, "set DATABASE_URL (and DATABASE_AUTH_TOKEN) to the fleet's, as the API has it")
  try {
    const epoch = sub === 'rotate' ? await rotateHostSecret(storage.db, id) : await hostSecretEpoch(storage.db, id)
    if (epoch === undefined) throw new CommandError(`termkeep: no host ${id} is registered (termkeep hosts lists them)`)
    return await deriveHostSecret(fleetSecret, id, epoch)
  } finally {
    storage.close()
  }
}
