/**
 * The cross-runtime smoke suite: one table of route checks, run unchanged against every runtime
 * that serves the API (Node, Deno, Workers), all on a real sqld and a real sidecar process that
 * uses the same remote database. The behaviour suites stay in Node; these only prove that each
 * route works end to end on each runtime.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startBackend, type SmokeBackend } from './backend.ts'
import type { RunningTarget } from './targets.ts'

export interface SmokeContext {
  /** The API's base URL on the runtime under test. */
  url: string
  /** What /v1/health reports as `runtime`. */
  runtime: string
  backend: SmokeBackend
}

export interface RouteCheck {
  name: string
  run(ctx: SmokeContext): Promise<void>
}

const bearer = (secret: string) => ({ authorization: `Bearer ${secret}` })

export const ROUTE_CHECKS: RouteCheck[] = [
  {
    name: 'GET /v1/health reports the remote database and the sidecar reachable',
    async run({ url, runtime, backend }) {
      const response = await fetch(`${url}/v1/health`)
      expect(response.status).toBe(200)
      expect(await response.json()).toEqual({
        status: 'ok',
        runtime,
        database: { reachable: true },
        sidecar: { reachable: true, generation: backend.sidecar.generation },
      })
    },
  },
]

/**
 * Registers the smoke suite for one runtime: starts the backend and the target once for the file
 * and runs every route check against it.
 */
export function describeSmoke(
  title: string,
  runtime: string,
  start: (backend: SmokeBackend) => Promise<RunningTarget>,
): void {
  describe(title, () => {
    let backend: SmokeBackend | undefined
    let target: RunningTarget | undefined
    const ctx = () => ({ url: target!.url, runtime, backend: backend! })

    beforeAll(async () => {
      backend = await startBackend()
      target = await start(backend)
    }, 180_000)
    afterAll(async () => {
      await target?.stop()
      await backend?.stop()
    })

    for (const check of ROUTE_CHECKS) it(check.name, () => check.run(ctx()))
  })
}

export { bearer }
