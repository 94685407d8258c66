/**
 * What the two esbuild caches share (bundle.ts: a process's entry, worker-bundle.ts: a worker
 * thread's code): a build is reused while every input it read is as it was, told by size and
 * modification time (no content hash: a start must not read the whole graph), and its files are
 * placed whole, so a process starting while another writes never reads half a file.
 */
import { renameSync, statSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The installation: the directory holding package.json and node_modules (esbuild's working
 * directory, to which its metafile's input paths are relative). */
export const INSTALL_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..')

/** A build's inputs, by path relative to INSTALL_ROOT: [size, mtimeMs] as they were when read. */
export type BuildInputs = Record<string, [size: number, mtimeMs: number]>

/** Records `path`'s size and modification time, once (the first stat wins: a file edited during
 * the build reads as changed at the next start). */
export function recordInput(inputs: BuildInputs, path: string): void {
  const s = statSync(join(INSTALL_ROOT, path))
  inputs[path] ??= [s.size, s.mtimeMs]
}

/** Whether every input is as recorded (a missing one is a change). */
export function inputsUnchanged(inputs: BuildInputs): boolean {
  try {
    return Object.entries(inputs).every(([path, [size, mtimeMs]]) => {
      const s = statSync(join(INSTALL_ROOT, path))
      return s.size === size && s.mtimeMs === mtimeMs
    })
  } catch {
    return false
  }
}

/** Writes `path` beside itself, then renames it into place. */
export function placeFile(path: string, contents: string | Uint8Array): void {
  const temporary = `${path}.${process.pid}.tmp`
  writeFileSync(temporary, contents)
  renameSync(temporary, path)
}
