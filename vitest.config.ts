import { defineConfig } from 'vitest/config'

export default defineConfig({
  test: {
    projects: [
      {
        test: {
          name: 'node',
          include: ['{api,keeper,local,sidecar,schema,common,storage,cli,web,test}/**/*.test.ts'],
          exclude: ['test/workers/**', 'node_modules/**'],
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
