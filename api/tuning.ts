/**
 * The API's own tuning: knobs of this process that no client relies on, each with its reason
 * (the public contract's limits are schema/limits.ts).
 */

// ── Streams ───────────────────────────────────────────────────────────────────
/** How often a registry watch polls the event log for other API instances' mutations. */
export const REGISTRY_POLL_MS = 250
/** How often an events stream polls the run's log in libSQL (the sidecar writes it; any API
 * instance may serve the stream). */
export const WORKFLOW_EVENTS_POLL_MS = 200

// ── The sidecar client ────────────────────────────────────────────────────────
/** Margin for the sidecar to answer once its work is done (part of close's budget below). */
export const SIDECAR_CONNECT_TIMEOUT_MS = 2_000
/** How long a sidecar call may wait for its answer's headers while the sidecar is alive (its health
 * answers, see SIDECAR_LIVENESS_PROBE_MS): create spawns a shell, follow waits for the emulator's
 * snapshot, streams replay before their first event, and any call may wait behind the work of
 * hundreds of streams on a loaded host, which is busy, not unreachable. Close has its own budget:
 * kill grace + drain + the margin above. */
export const SIDECAR_SLOW_CALL_TIMEOUT_MS = 15_000
/** A sidecar call with no answer after this long (and again every as long) asks whether the
 * sidecar is alive at all: its health, or any answer it gave within this long. Liveness is never
 * judged by the call's own answer, which may be queued behind stream work there. */
export const SIDECAR_LIVENESS_PROBE_MS = 1_000
/** The liveness answer's budget: a sidecar whose health does not answer within this is taken for
 * hung, and the calls waiting for it are 503 (a dead one refuses the connection at once). Its
 * health answers within one event-loop turn; 5 s is what a host starved of CPU (load 8 on 2
 * cores) still met, where 2 s was sometimes missed. */
export const SIDECAR_LIVENESS_TIMEOUT_MS = 5_000
/** One liveness probe's verdict is shared by every call that asks while it is out, and a "not
 * alive" verdict stands this long after it (an "alive" one stands SIDECAR_LIVENESS_PROBE_MS, as
 * any answer does): N calls waiting on a busy sidecar send it one health request, not N. */
export const SIDECAR_LIVENESS_VERDICT_MS = 1_000

// ── Health ────────────────────────────────────────────────────────────────────
/** `/v1/health` answers within 250 ms whatever it asks (docs/reliability.md): once a first answer
 * is known it waits this long for the sidecar's and the database's, then reports the state last
 * known with its age (a stopped sidecar held health for its whole 5 s liveness deadline). The rest
 * of the 250 ms is the API's own work. */
export const HEALTH_WAIT_MS = 150

// ── MCP ───────────────────────────────────────────────────────────────────────
/** After a program's output ended, how long the API waits for the sidecar to record its exit
 * (the exit is reported right after the end of output and written to the database at once). */
export const MCP_EXIT_RECORD_WAIT_MS = 2_000
/** `send_keys` and `run_workflow` retry a request whose outcome is unknown (503) within their one
 * tool call for at most this long: the agent waits on the call, and a few API timeouts cover a
 * stall or a restart. */
export const MCP_RETRY_MS = 15_000

// ── Hosts ─────────────────────────────────────────────────────────────────────
/** How long one API instance reuses the hosts it read (URL, liveness) before reading them again:
 * a live call costs one query (its session's host), not two. A host that just went down is found
 * by its refused connection anyway; one that just registered is seen within this long. */
export const HOSTS_CACHE_MS = 1_000
/** How often a hosts watch reads the hosts again: a heartbeat-derived liveness has no event log
 * to wake on, and the hosts cache (HOSTS_CACHE_MS) makes reading more often pointless. */
export const HOSTS_WATCH_POLL_MS = 1_000
