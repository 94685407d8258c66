/**
 * Runs in every vitest worker before each test file (vitest.config.ts `setupFiles`): after the
 * file, no keeper a sidecar of it started may be left running, whatever the file's own cleanup did.
 */
import { afterAll } from 'vitest'
import { stopWatchedKeepers } from './keepers.ts'

afterAll(stopWatchedKeepers)
