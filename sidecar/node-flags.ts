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
