/**
 * What the two esbuild caches share (bundle.ts: a process's entry, worker-bundle.ts: a worker
 * thread's code): a build is reused while every input it read is as it was, told by size and
 * modification time (no content hash: a start must not read the whole graph), and its files are
 * placed whole, so a process starting while another writes never reads half a file.
 */
import { renameSync, statSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { type BuildInputs, INSTALL_ROOT } from './fresh-bundle.mjs'

export { type BuildInputs, INSTALL_ROOT, inputsUnchanged } from './fresh-bundle.mjs'

/** Records `path`'s size and modification time, once (the first stat wins: a file edited during
 * the build reads as changed at the next start). */
export function recordInput(inputs: BuildInputs, path: string): void {
  const s = statSync(join(INSTALL_ROOT, path))
  inputs[path] ??= [s.size, s.mtimeMs]
}

/** Writes `path` beside itself, then renames it into place. */
export function placeFile(path: string, contents: string | Uint8Array): void {
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, contents)
  renameSync(temporary, path)
}
