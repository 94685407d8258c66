/**
 * The install step for the MCP conformance suite and the Node 22 it needs (`postinstall`, after
 * the native build): `npm ci` in test/conformance/, a package of its own so its `node` binary
 * never shadows the project's Node 20 in `node_modules/.bin`.
 *
 *   node --import tsx scripts/conformance-install.ts
 *
 * - An install of the current lockfile is kept: a stamp of test/conformance/package-lock.json is
 *   written into its node_modules after a good install, and a matching stamp skips the step. So
 *   running it again (`npm ci` twice, `npm link`, an `npx` that installs the project) costs a
 *   hash, not a download, and needs no network.
 * - It never fails the project's install: without a registry (offline, a platform npm has no
 *   Node 22 for) it says so and exits 0, and test/api/mcp-conformance.test.ts then fails loudly,
 *   naming what is missing, instead of passing silently.
 */
import { spawnSync } from 'node:child_process'
import { createHash } from 'node:crypto'
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'

const DIR = fileURLToPath(new URL('../test/conformance/', import.meta.url))
const STAMP = join(DIR, 'node_modules', '.termkeep-installed')
/** A fresh install downloads ~120 packages (the Node binary is ~30 MB); a stalled registry ends it. */
const INSTALL_TIMEOUT_MS = 10 * 60_000

function lockStamp(): string {
  return createHash('sha256')
    .update(readFileSync(join(DIR, 'package-lock.json')))
    .digest('hex')
}

function main(): void {
  const wanted = lockStamp()
  if (existsSync(STAMP) && readFileSync(STAMP, 'utf8') === wanted) {
    console.log('termkeep: the MCP conformance suite is installed (test/conformance): kept')
    return
  }
  // Few, short retries: offline (a closed registry) ends in seconds, not minutes.
  const result = spawnSync(
    'npm',
    [
      'ci',
      '--no-audit',
      '--no-fund',
      '--loglevel=error',
      '--fetch-retries=1',
      '--fetch-retry-mintimeout=1000',
      '--fetch-retry-maxtimeout=3000',
    ],
    { cwd: DIR, stdio: 'inherit', timeout: INSTALL_TIMEOUT_MS },
  )
  if (result.status === 0) {
    writeFileSync(STAMP, wanted)
    console.log('termkeep: the MCP conformance suite and its Node 22 are installed (test/conformance)')
    return
  }
  console.warn(
    'termkeep: WARNING: the MCP conformance suite could not be installed (test/conformance: `npm ci` failed, offline or no Node 22 for this platform); ' +
      'test/api/mcp-conformance.test.ts will fail until `node --import tsx scripts/conformance-install.ts` succeeds',
  )
}

main()
