/**
 * `termkeep serve` outlives its sidecar, and the terminals outlive it too: kill -9 of the sidecar
 * (three times in a row, each while terminals print) leaves the API up, serving terminal lists and
 * persisted displays, answering live routes 503 `sidecar/unavailable`, until a new sidecar
 * generation is up (1 s, 2 s, 4 s of backoff), which adopts every terminal from the keeper: still
 * running, every tick journaled once, what they started still alive. SIGTERM stops the API and the
 * sidecar in order and says how many terminals keep running.
 */
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { stopKeeper } from './support/keepers.ts'
import { alive, listenerPid, startServe, type ServedStack } from './support/serve.ts'
import { waitFor } from './support/ports.ts'
import { shellsFixture } from './support/terminals.ts'

// Prints a tick every half second: it keeps producing output, and its screen settles between
// ticks (so a display revision is persisted while it runs). It also starts a program that ignores
// SIGHUP: a crash of the sidecar must not end it (nor anything else of the terminal).
const work = mkdtempSync(join(tmpdir(), 'termkeep-supervise-'))
const shells = shellsFixture({
  ticker: `nohup sleep 1000 >/dev/null 2>&1 & echo $! > ${work}/$TERMKEEP_TERMINAL_ID.pid; i=0; while :; do i=$((i+1)); echo "tick $i"; sleep 0.5; done`,
})
const orphanOf = (tid: string) => Number(readFileSync(join(work, `${tid}.pid`), 'utf8'))

interface Health {
  status: string
  sidecar: { reachable: boolean; generation?: number }
}

async function health(stack: ServedStack): Promise<Health> {
  return (await (await fetch(`${stack.url}/v1/health`)).json()) as Health
}

/** The SSE events of a finite stream (readDisplay), by name. */
async function events(response: Response): Promise<string[]> {
  const text = await response.text()
  return [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]!)
}

async function outputText(stack: ServedStack, path: string): Promise<string> {
  let text = ''
  for (let after = 0; ; ) {
    const page = (await (await stack.call('GET', `${path}/output?after=${after}&limit=256`)).json()) as {
      items: Array<{ data?: string }>
      next: number
    }
    text += page.items.map((i) => (i.data ? Buffer.from(i.data, 'base64').toString() : '')).join('')
    if (page.next === after) return text
    after = page.next
  }
}

/** The tick numbers a ticker printed, in order. */
const ticks = (text: string) => [...text.matchAll(/^tick (\d+)\r$/gm)].map((m) => Number(m[1]))

describe('termkeep serve supervises its sidecar', () => {
  it('keeps the API and the terminals up through kill -9 of the sidecar, restarts it with backoff, and still stops in order', async () => {
    const stack = await startServe({ TERMKEEP_SHELLS_FILE: shells.shellsFile })
    try {
      expect((await stack.call('POST', '/v1/sessions', { id: 'sup', cwd: shells.dir })).status).toBe(201)
      let generation = (await health(stack)).sidecar.generation!
      for (const [round, backoff] of [
        [1, 1],
        [2, 2],
        [3, 4],
      ] as const) {
        const tid = `ticker-${round}`
        const T = `/v1/sessions/sup/terminals/${tid}`
        expect((await stack.call('PUT', T, { cols: 80, rows: 24, shell: shells.path('ticker') })).status).toBe(201)
        // It prints, and a settled screen of it is in the database.
        await waitFor(async () => (await outputText(stack, T)).includes('tick 2'), 15_000, 'output')
        await waitFor(
          async () => (await stack.call('GET', `${T}/display`, undefined, { accept: 'text/event-stream' })).status === 200,
          15_000,
          'a display',
        )

        const pid = listenerPid(stack.sidecarPort)!
        expect(pid).toBeGreaterThan(0)
        process.kill(pid, 'SIGKILL')
        await waitFor(async () => !alive(pid), 5_000, 'the sidecar to die')
        const started = orphanOf(tid)
        expect(alive(started)).toBe(true)

        // The API stays up: stored things are served, live routes are 503.
        const list = (await (await stack.call('GET', '/v1/sessions/sup/terminals')).json()) as { terminals: Array<{ id: string }> }
        expect(list.terminals.map((t) => t.id)).toContain(tid)
        const display = await stack.call('GET', `${T}/display`, undefined, { accept: 'text/event-stream' })
        expect(display.status).toBe(200)
        expect(await events(display)).toEqual(expect.arrayContaining(['begin', 'rows', 'end']))
        const live = await stack.call('GET', '/v1/sessions/sup/terminal-environment')
        expect(live.status).toBe(503)
        expect(((await live.json()) as { error: { code: string } }).error.code).toBe('sidecar/unavailable')
        expect(await health(stack)).toMatchObject({ status: 'degraded', sidecar: { reachable: false } })

        // A new generation within seconds, after the logged backoff.
        const up = await waitFor(
          async () => {
            const h = await health(stack)
            return h.sidecar.reachable && h.sidecar.generation !== generation && h.sidecar.generation
          },
          backoff * 1000 + 30_000,
          'a new sidecar generation',
        )
        expect(up).toBeGreaterThan(generation)
        // Judged dead at once by its pid and start time (same host): no wait for a lease.
        expect(stack.output()).toMatch(new RegExp(`earlier generation\\(s\\) ended: (?:[^\\n]*, )?${generation} \\(its process is gone\\)`))
        generation = up
        expect(stack.output()).toMatch(
          new RegExp(
            `termkeep: the sidecar \\(pid ${pid}, generation \\d+\\) was killed by SIGKILL after [\\d.]+ s; starting it again in ${backoff} s \\(restart ${round}\\)`,
          ),
        )
        expect(stack.output()).toContain(`termkeep: the sidecar is up again: generation ${up} (pid ${listenerPid(stack.sidecarPort)})`)
        expect(stack.output()).toContain(`termkeep sidecar: adopted ${round} terminal(s) from the keeper`)

        // Every terminal so far was adopted: running in the new generation, its program and what
        // it started alive, its ticks journaled once each, in order, across every restart.
        for (let r = 1; r <= round; r++) {
          const path = `/v1/sessions/sup/terminals/ticker-${r}`
          const info = (await (await stack.call('GET', path)).json()) as { state: string; hostGeneration: number }
          expect([info.state, info.hostGeneration]).toEqual(['running', up])
          expect(alive(orphanOf(`ticker-${r}`))).toBe(true)
          const before = ticks(await outputText(stack, path))
          await waitFor(async () => ticks(await outputText(stack, path)).length > before.length, 15_000, `ticker-${r} to go on`)
          const all = ticks(await outputText(stack, path))
          expect(all).toEqual(Array.from({ length: all.length }, (_, i) => i + 1))
        }
      }
      // New terminals work on the last generation.
      const fresh = '/v1/sessions/sup/terminals/fresh'
      expect((await stack.call('PUT', fresh, { cols: 80, rows: 24, shell: shells.path('ticker') })).status).toBe(201)
      await waitFor(async () => (await outputText(stack, fresh)).includes('tick 1'), 15_000, 'output of a new terminal')

      // SIGTERM: the API, then the sidecar, both gone when serve exits; the terminals run on.
      const pid = listenerPid(stack.sidecarPort)!
      const sidecarAliveAtExit = new Promise<boolean>((resolve) => stack.child.once('exit', () => resolve(alive(pid))))
      expect(await stack.stop({ terminals: 'keep' })).toBe(0)
      expect(await sidecarAliveAtExit).toBe(false)
      expect(stack.output()).toContain('termkeep: 4 terminals keep running; `termkeep stop --terminals` ends them')
      for (const tid of ['ticker-1', 'ticker-2', 'ticker-3']) expect(alive(orphanOf(tid))).toBe(true)
      expect(stack.output()).not.toContain('restart 4')
    } finally {
      stack.child.kill('SIGKILL')
      await stopKeeper(stack.dataDir)
    }
  }, 180_000)
})
