/**
 * The registry watch on the client: one pure reducer over `baseline`, `upsert`, `remove`, `order`
 * and `archived`, and a loop that keeps the stream open and resumes it with `Last-Event-ID`.
 */
import type { RegistryIncrement, Workspace, WorkspaceList } from '../../schema/wire/registry.ts'
import { ApiError, type TermkeepClient } from './api.ts'

export const EMPTY_REGISTRY: WorkspaceList = { workspaces: [], archivedSessionIds: [] }

type Payload<K extends RegistryIncrement['kind']> = Extract<RegistryIncrement, { kind: K }>['payload']

/** Pure: the registry after one watch event. Unknown events leave it unchanged. */
export function applyRegistryEvent(state: WorkspaceList, event: string, data: unknown): WorkspaceList {
  switch (event) {
    case 'baseline':
      return data as WorkspaceList
    case 'upsert': {
      const { workspace } = data as Payload<'upsert'>
      const at = state.workspaces.findIndex((w) => w.id === workspace.id)
      const workspaces = [...state.workspaces]
      // A new workspace is prepended (the registry's own rule); an `order` event may follow.
      if (at === -1) workspaces.unshift(workspace)
      else workspaces[at] = workspace
      return { ...state, workspaces }
    }
    case 'remove': {
      const { workspaceId } = data as Payload<'remove'>
      return { ...state, workspaces: state.workspaces.filter((w) => w.id !== workspaceId) }
    }
    case 'order': {
      const { workspaceIds } = data as Payload<'order'>
      const byId = new Map(state.workspaces.map((w): [string, Workspace] => [w.id, w]))
      const ordered = workspaceIds.flatMap((id) => byId.get(id) ?? [])
      const rest = state.workspaces.filter((w) => !workspaceIds.includes(w.id))
      return { ...state, workspaces: [...ordered, ...rest] }
    }
    case 'archived':
      return { ...state, archivedSessionIds: (data as Payload<'archived'>).archivedSessionIds }
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
  onChange: (registry: WorkspaceList) => void,
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
