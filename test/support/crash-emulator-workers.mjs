// Fault injection for tests, preloaded into a sidecar (`nodeArgs: ['--import', <this file>]`):
// remembers the emulator worker threads it starts, and on SIGUSR2 makes each live one crash with
// an uncaught exception (a message the worker's handler cannot read).
import module from 'node:module'
import { isMainThread } from 'node:worker_threads'

if (isMainThread) {
  const threads = await import('node:worker_threads')
  const Original = threads.Worker
  const emulators = []
  class Recorded extends Original {
    constructor(code, options) {
      super(code, options)
      if (options?.name === 'termkeep-emulator') emulators.push(this)
    }
  }
  threads.default.Worker = Recorded
  module.syncBuiltinESMExports()
  process.on('SIGUSR2', () => {
    const live = emulators.filter((worker) => worker.threadId !== -1)
    process.stderr.write(`[fault injection] crashing ${live.length} emulator worker(s)\n`)
    for (const worker of live) worker.postMessage(null)
  })
}
