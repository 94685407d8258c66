/**
 * The sidecar client judges liveness by the sidecar's health (or any recent answer), never by how
 * long a call's own answer takes: a busy sidecar's late answer is waited for, a due deadline never
 * cuts an answer that already arrived, and a recent answer saves the health probe.
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { afterEach, describe, expect, it } from 'vitest'
import { SIDECAR_CONNECT_TIMEOUT_MS, SIDECAR_LIVENESS_PROBE_MS, SIDECAR_LIVENESS_VERDICT_MS } from './tuning.ts'
import { nodeFetch } from './runtime/node-transport.ts'
import { SidecarClient } from './sidecar-client.ts'
import { SidecarLiveness } from './sidecar-liveness.ts'

const servers: ReturnType<typeof createServer>[] = []
afterEach(() => {
  for (const server of servers.splice(0)) server.closeAllConnections(), server.close()
})

async function sidecar(handle: (request: IncomingMessage, response: ServerResponse) => void): Promise<string> {
  const server = createServer(handle)
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`
}

const json = (response: ServerResponse, body: unknown) =>
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body))
const ENVIRONMENT = { cwd: '/tmp', limits: {} }

describe('sidecar liveness', () => {
  it.each([
    ['node:http', nodeFetch],
    ['fetch', undefined],
  ] as const)('waits for a late answer while the health answers (%s)', async (_, transport) => {
    let probes = 0
    const url = await sidecar((request, response) => {
      if (request.url === '/v1/health') {
        probes++
        return json(response, { ok: true, generation: 1, pid: 1 })
      }
      // Busy: the answer comes well after the 2 s a quick call used to get.
      setTimeout(() => json(response, ENVIRONMENT), SIDECAR_CONNECT_TIMEOUT_MS + 1_500)
    })
    const client = new SidecarClient({ url, secret: 'x'.repeat(16), fetch: transport })
    expect(await client.environment('s1')).toEqual(ENVIRONMENT)
    expect(probes).toBeGreaterThanOrEqual(2)
  })

  it('does not cut an answer that arrived while the process could not run its timers', async () => {
    const url = await sidecar((_request, response) => {
      json(response, ENVIRONMENT)
      // The answer is in the client's socket; this process now stalls past the call's deadline
      // (a loaded host), so the deadline is due before the socket is read again.
      const until = Date.now() + 300
      while (Date.now() < until) {
        // busy
      }
    })
    const client = new SidecarClient({ url, secret: 'x'.repeat(16), fetch: nodeFetch })
    const response = await client.request('/v1/sessions/s1/terminal-environment', {}, 100)
    expect(await response.json()).toEqual(ENVIRONMENT)
  })

  it('takes any recent answer for a sign of life instead of probing the health', async () => {
    let probes = 0
    const url = await sidecar((request, response) => {
      if (request.url === '/v1/health') return (probes++, json(response, { ok: true, generation: 1, pid: 1 }))
      if (request.url?.endsWith('/slow/terminal-environment')) return void setTimeout(() => json(response, ENVIRONMENT), 3_000)
      json(response, ENVIRONMENT)
    })
    const client = new SidecarClient({ url, secret: 'x'.repeat(16), fetch: nodeFetch })
    const slow = client.environment('slow')
    let quick = 0
    const ticking = setInterval(() => void client.environment('quick').then(() => quick++), 200)
    try {
      expect(await slow).toEqual(ENVIRONMENT)
    } finally {
      clearInterval(ticking)
    }
    expect(quick).toBeGreaterThan(5)
    expect(probes).toBe(0)
  })

  it('sends one health request for many callers waiting at once, and shares its verdict', async () => {
    let probes = 0
    let healthy = true
    const url = await sidecar((request, response) => {
      if (request.url !== '/v1/health') return json(response, ENVIRONMENT)
      probes++
      // Answers late (busy), so every caller below asks while the one probe is out.
      setTimeout(() => (healthy ? json(response, { ok: true }) : response.writeHead(503).end()), 200)
    })
    const liveness = new SidecarLiveness((signal) => fetch(`${url}/v1/health`, { signal }))
    const ask = () => Promise.all(Array.from({ length: 50 }, () => liveness.alive()))
    expect(await ask()).toEqual(Array(50).fill(true))
    expect(probes).toBe(1)
    await new Promise((r) => setTimeout(r, SIDECAR_LIVENESS_PROBE_MS + 50))
    healthy = false
    expect(await ask()).toEqual(Array(50).fill(false))
    expect(probes).toBe(2)
    expect(await liveness.alive()).toBe(false) // the verdict stands a while: no new probe
    expect(probes).toBe(2)
    healthy = true
    await new Promise((r) => setTimeout(r, SIDECAR_LIVENESS_VERDICT_MS + 50))
    expect(await ask()).toEqual(Array(50).fill(true))
    expect(probes).toBe(3)
  })

  it('probes a busy sidecar once per interval for all the calls that wait on it, not once per call', async () => {
    let probes = 0
    const url = await sidecar((request, response) => {
      if (request.url === '/v1/health') return (probes++, json(response, { ok: true, generation: 1, pid: 1 }))
      setTimeout(() => json(response, ENVIRONMENT), 2 * SIDECAR_LIVENESS_PROBE_MS + 700)
    })
    const client = new SidecarClient({ url, secret: 'x'.repeat(16), fetch: nodeFetch })
    const calls = 40
    const answers = await Promise.all(Array.from({ length: calls }, (_, i) => client.environment(`s${i}`)))
    expect(answers).toEqual(Array(calls).fill(ENVIRONMENT))
    // Each call asks about twice while it waits; they share: about one probe per interval.
    expect(probes).toBeGreaterThanOrEqual(1)
    expect(probes).toBeLessThanOrEqual(4)
  })
})
