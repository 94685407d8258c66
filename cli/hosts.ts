/**
 * `termkeep hosts`: the hosts (machines) the server reaches, whether each is up. Two local forms
 * bootstrap a new host (docs/operations.md): `hosts id` prints this data directory's host id
 * (made now if it has none), and `hosts secret <id>`, where the API runs, prints that host's
 * sidecar secret, derived from TERMKEEP_FLEET_SECRET.
 */
import { parseArgs } from 'node:util'
import { deriveHostSecret } from '../common/crypto.ts'
import { HOST_ID_PATTERN } from '../schema/limits.ts'
import { parseConfig } from '../schema/config.ts'
import { printable } from '../schema/wire/common.ts'
import type { Host } from '../schema/wire/hosts.ts'
import { ensureDataDir } from '../sidecar/data-dir.ts'
import { hostId } from '../sidecar/generations/host-identity.ts'
import { REMOTE_OPTIONS, REMOTE_USAGE, remoteClient } from './remote.ts'
import { CommandError, exactArgs, HELP_OPTION, JSON_OPTION, printedHelp, printJson, UsageError } from './usage.ts'

const USAGE = `usage: termkeep hosts [--json] | hosts id | hosts secret <host-id>

  Lists the hosts (machines) the server reaches: name, id, whether it is up, version, capacity,
  the URL the API reaches it at.

  id                        this machine's host id (TERMKEEP_DATA_DIR/host.id, made if missing)
  secret <host-id>          that host's sidecar secret (TERMKEEP_HOST_SECRET), derived from
                            TERMKEEP_FLEET_SECRET; run it where the API runs
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
  if (sub === 'secret') {
    const [id] = exactArgs(rest, ['host-id'], 'hosts secret')
    if (!HOST_ID_PATTERN.test(id!)) throw new UsageError(`termkeep: ${JSON.stringify(id)} is not a host id (termkeep hosts lists them)`)
    const { fleetSecret } = parseConfig(process.env)
    if (!fleetSecret) throw new CommandError('termkeep: hosts secret needs TERMKEEP_FLEET_SECRET, the secret the API holds')
    out.write(`${await deriveHostSecret(fleetSecret, id!)}\n`)
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
