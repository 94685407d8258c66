/**
 * Worker threads run TypeScript through tsx. `execArgv: ['--import', 'tsx']` does not reach a
 * worker's entry module on Node 20, so a tiny bootstrap registers tsx's loader first, then imports
 * the entry.
 */
import { createRequire } from 'node:module'
import { pathToFileURL } from 'node:url'
import { Worker } from 'node:worker_threads'

export function startTsWorker(entry: URL): Worker {
  const tsx = pathToFileURL(
    createRequire(import.meta.url)
      .resolve('tsx/esm/api')
      .replace(/\.cjs$/, '.mjs'),
  ).href
  const code = `import(${JSON.stringify(tsx)}).then((m) => m.register()).then(() => import(${JSON.stringify(entry.href)}))`
  return new Worker(code, { eval: true, execArgv: [] })
}
