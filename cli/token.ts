/** `termkeep token create`: mint a token for given sessions and grants, printed once. */
import { parseArgs } from 'node:util'
import { createToken } from '../storage/tokens.ts'
import type { Config } from '../schema/config.ts'
import { GRANTS, isGrant, type Grant } from '../schema/grants.ts'
import { OBSERVE_ENV_NAME_PATTERN, OBSERVE_MAX_DECLARED_ENV } from '../schema/limits.ts'
import { ADMIN_NEEDS_ALL_SESSIONS, adminBoundToSessions } from '../schema/wire/tokens.ts'
import { databaseFile, openServerDatabase } from './database.ts'
import { HELP_OPTION, printedHelp, UsageError } from './usage.ts'

const USAGE = `usage: termkeep token create --grant G [--grant G ...] [--session ID ...] [--name NAME] [--observe-env NAME ...]
       termkeep token ls [--json] | revoke <id>      (through a server: \`termkeep token ls --help\`)

  create mints a token in the configured database and prints its secret once.
  Grants: ${GRANTS.join(', ')}
  Without --session the token covers all sessions (admin needs all sessions).
  --observe-env NAME declares an environment variable terminal observation may read (and root
  file lookups at) for this token; repeat it for more (at most ${OBSERVE_MAX_DECLARED_ENV}).`

export async function tokenCommand(config: Config, args: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args,
    allowPositionals: true,
    options: {
      grant: { type: 'string', multiple: true, default: [] },
      session: { type: 'string', multiple: true, default: [] },
      name: { type: 'string', default: 'cli' },
      'observe-env': { type: 'string', multiple: true, default: [] },
      ...HELP_OPTION,
    },
  })
  if (printedHelp(values, USAGE)) return 0
  if (positionals[0] !== 'create' || positionals.length !== 1) {
    throw new UsageError(
      'termkeep: usage: termkeep token create --grant G [--session ID ...] [--name NAME] [--observe-env NAME ...] | ls | revoke ID',
    )
  }
  const grants: Grant[] = []
  for (const grant of values.grant) {
    if (!isGrant(grant)) throw new UsageError(`termkeep: unknown grant "${grant}"; grants are: ${GRANTS.join(', ')}`)
    grants.push(grant)
  }
  if (grants.length === 0) throw new UsageError(`termkeep: give at least one --grant (${GRANTS.join(', ')})`)
  const observeEnvironment = values['observe-env']
  for (const name of observeEnvironment) {
    if (!OBSERVE_ENV_NAME_PATTERN.test(name)) {
      throw new UsageError(`termkeep: --observe-env "${name}" is not an environment variable name (an upper-case letter, then A-Z 0-9 _)`)
    }
  }
  if (new Set(observeEnvironment).size > OBSERVE_MAX_DECLARED_ENV)
    throw new UsageError(`termkeep: at most ${OBSERVE_MAX_DECLARED_ENV} --observe-env names`)
  if (adminBoundToSessions(grants, values.session.length > 0 ? values.session : 'all')) {
    throw new UsageError(`termkeep: ${ADMIN_NEEDS_ALL_SESSIONS} (drop --session)`)
  }
  // A token minted into a database no server reads is a token every server refuses.
  const file = databaseFile(config)
  const storage = await openServerDatabase(
    config,
    "run this where `npm start` runs, or set TERMKEEP_DATA_DIR (or DATABASE_URL) to the server's",
  )
  try {
    const sessions = values.session.length > 0 ? values.session : 'all'
    const { token, secret } = await createToken(storage.db, { name: values.name, grants, sessions, observeEnvironment })
    console.log(secret)
    const observes = token.observeEnvironment.length > 0 ? `; observes ${token.observeEnvironment.join(', ')}` : ''
    console.error(
      `termkeep: token ${token.id} (${token.name}) for ${sessions === 'all' ? 'all sessions' : sessions.join(', ')}: ${grants.join(', ')}${observes} (in ${file ?? config.databaseUrl})`,
    )
    return 0
  } finally {
    storage.close()
  }
}
