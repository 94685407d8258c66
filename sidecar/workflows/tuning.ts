/** The workflow engine's own tuning (the public limits are in schema/limits.ts). */

/** How often the sidecar measures a script process's CPU time and memory: it is the backstop
 * behind the engine's own limits, which act first, so once a second is soon enough. */
export const WORKFLOW_LIMIT_CHECK_MS = 1_000
/** CPU time the sidecar grants a script process beyond the run's limit before it kills it: Node's
 * start and the engine's compile are counted here but not by the engine's own limit, which ends
 * the script first. */
export const WORKFLOW_CPU_BACKSTOP_GRACE_MS = 5_000
/** Resident memory a script process may use beyond the script's own WORKFLOW_SCRIPT_MEMORY_BYTES:
 * Node itself (~50 MB), its heap (WORKFLOW_SCRIPT_HEAP_MB) and the engine's code. More means code
 * escaped the engine's limit: the sidecar kills the process. */
export const WORKFLOW_PROCESS_MEMORY_SLACK_BYTES = 512 * 1024 * 1024
/** How long ending a run's leftover processes keeps looking for ones forked meanwhile. */
export const WORKFLOW_LEFTOVERS_WAIT_MS = 2_000
/** Sub-agent terminals start at this size: wide enough that an agent's plain output is rarely
 * wrapped in its rendered text; a person attaching resizes it to their window. */
export const AGENT_COLS = 120
export const AGENT_ROWS = 40
/** `readText()` calls of one run out at the sidecar at once (a page is 2 MiB); later ones wait in
 * the script's engine (guest.ts), and a script process with more out is ended. */
export const WORKFLOW_READS_IN_FLIGHT = 2
/** Bytes of a script process's stderr kept to explain its unexpected exit (an out-of-memory death). */
export const WORKFLOW_STDERR_TAIL_BYTES = 4 * 1024
/** The one probe at sidecar start of whether script processes can start in new namespaces: a
 * Node start takes well under a second; a hung unshare must not hold the sidecar's start. */
export const WORKFLOW_SANDBOX_PROBE_MS = 10_000
/** The longest line a script process may send the sidecar. The longest an honest one sends is a
 * `done` carrying the result (MAX_WORKFLOW_RESULT_BYTES of JSON) as a JSON string, about twice its
 * size once escaped; the guest refuses larger arguments before they cross. A longer line means
 * code escaped the engine: the run ends. */
export const WORKFLOW_SCRIPT_MESSAGE_MAX_BYTES = 4 * 1024 * 1024
/** How long a script's parse check before its run is published may take (check.ts). Scripts a
 * model writes parse in milliseconds; a 256 KiB script of 5,000 classes took 3.5 s on a loaded
 * machine: one that takes longer than this is refused, and the check's worker replaced. */
export const WORKFLOW_SCRIPT_CHECK_MS = 5_000
