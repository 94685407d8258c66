/**
 * The CLI's own tuning, each with its reason (the public contract's limits are schema/limits.ts).
 */

// ── Reconnecting ──────────────────────────────────────────────────────────────
/** How long `termkeep attach`, `new`, `output --follow` and `run` keep trying to reach a server
 * they lost before they give up (`--reconnect-timeout`): long enough for a server restart or a
 * network blip; past it, a user at a frozen screen is better served by a message and a prompt. */
export const CLI_RECONNECT_GIVE_UP_MS = 60_000
/** Input `termkeep attach` holds while its control is being confirmed; a paste beyond it is cut
 * (and reported). */
export const CLI_MAX_HELD_INPUT_BYTES = 64 * 1024

// ── termkeep serve's supervision of the sidecar ───────────────────────────────
/** `termkeep serve` waits this long for its sidecar's shutdown (last screens, processes, rows)
 * before it kills it and exits. */
export const SIDECAR_STOP_GRACE_MS = 15_000
/** `termkeep serve` starts a crashed sidecar again after this long, doubling per crash up to the
 * max (a sidecar that cannot start must not spin), and from the start again once one stayed up a
 * healthy minute. Meanwhile live routes answer 503 and everything stored is served. */
export const SIDECAR_RESTART_MIN_MS = 1_000
export const SIDECAR_RESTART_MAX_MS = 30_000
export const SIDECAR_HEALTHY_RESET_MS = 60_000
