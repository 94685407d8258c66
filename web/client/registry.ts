/**
 * The registry watch on the client: one pure reducer over `baseline`, `upsert`, `remove`, `order`
 * and `archived`, and a loop that keeps the stream open and resumes it with `Last-Event-ID`.
 */
import { ApiError, registryOf, workspaceView, type Registry, type TermkeepClient } from './api.ts'

export const EMPTY_REGISTRY: Registry = { workspaces: [], archivedSessionIds: [] }

/** Accepts a payload either bare or wrapped as `{type, value}`. */
function payload(data: unknown): Record<string, unknown> {
  const d = (data ?? {}) as Record<string, unknown>
  return (d.value && typeof d.value === 'object' ? d.value : d) as Record<string, unknown>
}

/** Pure: the registry after one watch event. Unknown events leave it unchanged. */
export function applyRegistryEvent(state: Registry, event: string, data: unknown): Registry {
  const p = payload(data)
  switch (event) {
    case 'baseline':
      return registryOf(p)
    case 'upsert': {
      const workspace = workspaceView(p.workspace ?? p)
      const at = state.workspaces.findIndex((w) => w.id === workspace.id)
      const workspaces = [...state.workspaces]
      // A new workspace is prepended (the registry's own rule); an `order` event may follow.
      if (at === -1) workspaces.unshift(workspace)
      else workspaces[at] = workspace
      return { ...state, workspaces }
    }
    case 'remove': {
      const id = String(p.workspaceId ?? p.id)
      return { ...state, workspaces: state.workspaces.filter((w) => w.id !== id) }
    }
    case 'order': {
      const ids = Array.isArray(p.workspaceIds) ? p.workspaceIds.map(String) : []
      const byId = new Map(state.workspaces.map((w) => [w.id, w]))
      const ordered = ids.flatMap((id) => (byId.has(id) ? [byId.get(id)!] : []))
      const rest = state.workspaces.filter((w) => !ids.includes(w.id))
      return { ...state, workspaces: [...ordered, ...rest] }
    }
    case 'archived':
      return { ...state, archivedSessionIds: Array.isArray(p.archivedSessionIds) ? p.archivedSessionIds.map(String) : [] }
    default:
      return state
  }
}

const RETRY_MS = [500, 1000, 2000, 5000]

/**
 * Watches the registry until `signal` aborts, calling `onChange` with each new state. Network
 * losses are retried with the last event id; a refusal (401, 403) stops the watch via `onError`.
 */
export async function watchRegistry(
  client: TermkeepClient,
  onChange: (registry: Registry) => void,
  onError: (error: ApiError) => void,
  signal: AbortSignal,
  onStatus?: (live: boolean) => void,
): Promise<void> {
  let state = EMPTY_REGISTRY
  let lastId: string | undefined
  let failures = 0
  while (!signal.aborted) {
    try {
      const events = await client.stream('/v1/workspaces/watch', { lastEventId: lastId, signal })
      onStatus?.(true)
      failures = 0
      for await (const event of events) {
        if (event.id !== undefined) lastId = event.id
        state = applyRegistryEvent(state, event.event, JSON.parse(event.data))
        onChange(state)
      }
    } catch (error) {
      if (signal.aborted) return
      if (error instanceof ApiError) return onError(error)
      failures++
    }
    onStatus?.(false)
    await new Promise((r) => setTimeout(r, RETRY_MS[Math.min(failures, RETRY_MS.length - 1)]))
  }
}
