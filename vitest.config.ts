import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    // Files wait on real processes (a sidecar, sqld, PTYs, Chromium) far more than they compute:
    // vitest's default of one worker per core but one (a single worker on 2 cores) left the
    // machine half idle. Two, not three: three were no faster on an idle machine (vitest 606 s
    // against 520-622 s with two: the files then compete for the CPU), and with other work loading
    // the machine they made timing-sensitive tests fail (health within 250 ms, the control handover).
    maxWorkers: 2,
    projects: [
      {
        test: {
          name: 'node',
          include: ['{api,keeper,local,sidecar,schema,common,storage,cli,web,test}/**/*.test.ts'],
          exclude: ['test/workers/**', '**/node_modules/**'],
          // No keeper a test file started outlives it (test/support/keepers.ts).
          setupFiles: ['test/support/setup.ts'],
          testTimeout: 60_000,
          hookTimeout: 60_000,
          pool: 'forks',
        },
      },
    ],
  },
})
