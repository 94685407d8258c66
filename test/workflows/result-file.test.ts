/**
 * TERMKEEP_RESULT_FILE is absolute under the default configuration too: a sidecar started with no
 * TERMKEEP_DATA_DIR (the default `./data`, relative to its own directory) while its agents run in
 * the session's directory, where a relative path names nothing.
 */
import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { afterAll, beforeAll, expect, it } from 'vitest'
import { startHarness, type Harness } from '../api/harness.ts'
import { AGENTS_ENV, endOf, prepare, runEvents, startRun } from './support.ts'

let h: Harness
let token: string

beforeAll(async () => {
  h = await startHarness({ sidecarEnv: AGENTS_ENV, defaultLocations: true })
  ;({ token } = await prepare(h))
}, 60_000)
afterAll(async () => {
  await h?.close()
})

it('an agent writes its result file with the default, relative data directory', async () => {
  expect(existsSync(join(h.dir, 'data', 'termkeep.db'))).toBe(true) // the sidecar's default, beside it
  const started = await startRun(h, token, {
    script: "const r = await agent('answer [result]'); return [r.stopReason, r.text]",
  })
  expect(endOf(await runEvents(h, token, started.id)).value).toEqual(['completed', 'result: answer'])
})
