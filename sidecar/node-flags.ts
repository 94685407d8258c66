/**
 * Node/V8 flags every launcher of the sidecar process passes (cli/serve.ts, and the tests' and
 * benchmarks' test/support/sidecar.ts, so what is measured is what runs).
 *
 * --max-semi-space-size=1 (MiB): during an output flood the sidecar allocates a steady stream of
 * short-lived objects (a base64 string per delivered item, PTY chunk wrappers, promises); V8 then
 * grows each isolate's young generation from 1 MiB toward 16 MiB semi-spaces and keeps it, for the
 * main thread and each emulator worker (the flag is process-wide). Measured on the journal
 * benchmark (2 × 100 MiB `cat`): sidecar RSS growth 78 MiB by default, 56 MiB at 2, 48 MiB at 1,
 * with throughput within run-to-run noise (nearly everything allocated dies young, so the extra
 * scavenges are cheap).
 *
 * --expose-gc: an emulator worker collects its heap once after screens leave it
 * (sidecar/emulator/collect.ts); V8 alone would keep an idle worker's released screens allocated
 * (~13 MiB each at 10,000 rows) until later output triggered a major GC. Nothing else calls `gc`.
 */
export const SIDECAR_NODE_FLAGS: readonly string[] = ['--max-semi-space-size=1', '--expose-gc']

/**
 * glibc's malloc settings for the sidecar process, which its launchers put in its environment
 * (glibc reads them before the first allocation: a running process cannot change them). A user's
 * own values win.
 *
 * MALLOC_ARENA_MAX=2: every thread that allocates (the main thread, the PTY thread, each emulator
 * worker, libuv's and V8's helpers) otherwise gets an arena of its own, up to 16 on two cores,
 * and each keeps the memory freed in it for its own reuse.
 * MALLOC_MMAP_THRESHOLD_=131072: buffers of 128 KiB and more (journal windows of up to 1 MiB for
 * the emulators, spool reads, zlib's state) are mapped and unmapped on their own; by default glibc
 * raises this threshold after the first such buffer is freed, and later ones are carved from the
 * arenas, where freeing them leaves holes the process keeps.
 * Measured with thirty terminals of coloured logs and two watchers each (bench display-scale,
 * docs/display.md): memory glibc held free fell from ~40 to ~5 MiB, the sidecar's RSS from ~270
 * to ~225 MiB.
 */
export const SIDECAR_MALLOC_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' }

/** The sidecar's environment: `env` with SIDECAR_MALLOC_ENV under it. */
export function sidecarEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...SIDECAR_MALLOC_ENV, ...env }
}
