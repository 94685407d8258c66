/**
 * The sidecar supervisor: its backoff, and its handling of real child processes that crash, stop
 * cleanly or fail to start (stand-ins for the sidecar: a process that announces a generation).
 */
import { spawn } from 'node:child_process'
import { afterEach, describe, expect, it } from 'vitest'
import { SIDECAR_HEALTHY_RESET_MS, SIDECAR_RESTART_MAX_MS, SIDECAR_RESTART_MIN_MS } from '../../cli/tuning.ts'
import { exitCause, restartDelay, SidecarSupervisor, type StartingSidecar } from '../../cli/supervise.ts'

describe('restartDelay', () => {
  it('starts at the minimum, doubles per crash up to the max, and resets after a healthy minute', () => {
    const delays: number[] = []
    let previous: number | undefined
    for (let i = 0; i < 8; i++) delays.push((previous = restartDelay(previous, 1_000)))
    expect(delays).toEqual([1_000, 2_000, 4_000, 8_000, 16_000, 30_000, 30_000, 30_000])
    expect(SIDECAR_RESTART_MIN_MS).toBe(1_000)
    expect(SIDECAR_RESTART_MAX_MS).toBe(30_000)
    expect(restartDelay(30_000, SIDECAR_HEALTHY_RESET_MS - 1)).toBe(30_000)
    expect(restartDelay(30_000, SIDECAR_HEALTHY_RESET_MS)).toBe(1_000)
  })

  it('names the cause of an exit', () => {
    expect(exitCause(null, 'SIGKILL')).toBe('was killed by SIGKILL')
    expect(exitCause(3, null)).toBe('exited with code 3')
  })
})

/** A child that announces `generation` (or exits with `failWith` first) and then waits. */
function standIn(generation: number, failWith?: number): StartingSidecar {
  const script =
    failWith === undefined
      ? `process.on('SIGTERM', () => process.exit(0)); process.send({ generation: ${generation} }); setInterval(() => {}, 1000)`
      : `process.exit(${failWith})`
  const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'ignore', 'ignore', 'ipc'] })
  children.push(child)
  const ready = new Promise<number>((resolve, reject) => {
    child.once('message', (m: { generation: number }) => resolve(m.generation))
    child.once('exit', (code) => reject(new Error(`exited during start-up (code ${code})`)))
  })
  return { child, ready }
}

const children: ReturnType<typeof spawn>[] = []
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL')
})

const waitUntil = async (check: () => boolean, ms = 10_000) => {
  const deadline = Date.now() + ms
  while (!check()) {
    if (Date.now() > deadline) throw new Error('timed out')
    await new Promise((r) => setTimeout(r, 20))
  }
}

describe('SidecarSupervisor', () => {
  it('starts a killed sidecar again after the backoff, logs why, and stops the new one in order', async () => {
    const lines: string[] = []
    let generation = 0
    // The second start fails once: it is retried after a longer wait.
    const plan = [undefined, 1, undefined]
    const supervisor = new SidecarSupervisor({ start: () => standIn(++generation, plan[generation - 1]), log: (l) => lines.push(l) })
    let gone = false
    await supervisor.start(() => (gone = true))
    const first = supervisor.child!
    const crashed = Date.now()
    first.kill('SIGKILL')
    await waitUntil(() => lines.some((l) => l.includes('is up again')))
    expect(Date.now() - crashed).toBeGreaterThanOrEqual(SIDECAR_RESTART_MIN_MS + 2 * SIDECAR_RESTART_MIN_MS)
    expect(lines[0]).toMatch(
      new RegExp(
        `^termkeep: the sidecar \\(pid ${first.pid}, generation 1\\) was killed by SIGKILL after [\\d.]+ s; starting it again in 1 s \\(restart 1\\)$`,
      ),
    )
    expect(lines[1]).toMatch(
      /^termkeep: the sidecar did not start \(exited during start-up \(code 1\)\); starting it again in 2 s \(restart 2\)$/,
    )
    expect(lines[2]).toBe(`termkeep: the sidecar is up again: generation 3 (pid ${supervisor.child!.pid})`)
    expect(supervisor.restarts).toBe(2)
    const last = supervisor.child!
    await supervisor.stop()
    expect(last.signalCode ?? last.exitCode).toBe(0) // its SIGTERM handler ran: an ordered stop
    expect(gone).toBe(false)
    expect(lines).toHaveLength(3) // nothing restarted after the stop
  })

  it('does not restart a sidecar that stopped cleanly, and says so', async () => {
    const lines: string[] = []
    const supervisor = new SidecarSupervisor({ start: () => standIn(7), log: (l) => lines.push(l) })
    let gone: string | undefined
    await supervisor.start((reason) => (gone = reason))
    supervisor.child!.kill('SIGTERM')
    await waitUntil(() => gone !== undefined)
    expect(gone).toMatch(/^the sidecar \(pid \d+, generation 7\) exited with code 0 after/)
    expect(lines).toEqual([`termkeep: ${gone}; stopping`])
  })

  it('cancels a restart that was due when it is stopped', async () => {
    const lines: string[] = []
    let starts = 0
    const supervisor = new SidecarSupervisor({ start: () => (starts++, standIn(starts)), log: (l) => lines.push(l) })
    await supervisor.start(() => {})
    supervisor.child!.kill('SIGKILL')
    await waitUntil(() => lines.length === 1)
    await supervisor.stop()
    await new Promise((r) => setTimeout(r, SIDECAR_RESTART_MIN_MS + 300))
    expect(starts).toBe(1)
  })
})
