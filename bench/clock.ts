/** The display benchmarks' clock: a pause, and milliseconds on the monotonic clock. */
export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))
export const now = () => Number(process.hrtime.bigint() / 1_000_000n)
