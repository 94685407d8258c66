#!/usr/bin/env node
// The published entry. The CLI runs from an esbuild bundle of its sources, split at each command's
// import as main.ts is (local/bundle.ts): a command starts in about a third of the CPU it takes
// through tsx's loader. Whether the bundle is current is checked in plain JavaScript before
// anything else loads; when it is missing or stale, tsx runs the bundler once, and where the bundle
// cannot be built or written (a read-only installation), the sources themselves run through tsx.
import { fileURLToPath, pathToFileURL } from 'node:url'
import { freshBundle } from '../local/fresh-bundle.mjs'

const MAIN = new URL('./main.ts', import.meta.url)

async function build() {
  const { register } = await import('tsx/esm/api')
  register()
  try {
    const { bundled } = await import('../local/bundle.ts')
    return await bundled(fileURLToPath(MAIN), { split: true })
  } catch {
    return undefined
  }
}

const entry = freshBundle(fileURLToPath(MAIN)) ?? (await build())
await import(entry === undefined ? MAIN.href : pathToFileURL(entry).href)
