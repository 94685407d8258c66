/**
 * Files: read-page throughput through the whole stack (HTTP → API guard → sidecar → confined read
 * → JSON) against reading the same file directly with node:fs in the same run.
 *
 * The file is ~32 MB of 400-byte lines, so a full page (5,000 lines) is ~2 MB, just under the cap.
 * "sequential" reads every page in order (what an agent paging through a file does); the baseline
 * reads the file with node:fs and cuts the same pages out of it. "first page" repeats one page.
 *
 * Target: a page crosses two HTTP hops and three JSON encodings (sidecar → API → client) and is
 * UTF-8-validated on the way, while the baseline only splits a string in memory; ≥ 0.1× of that
 * means the confinement and routing add little beyond the unavoidable transport.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs'
import { open, readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createToken } from '../storage/tokens.ts'
import { startNodeApi } from '../api/runtime/node.ts'
import { MAX_FILE_PAGE_LINES } from '../schema/limits.ts'
import { sessions, workspaces, workspaceSessions } from '../storage/tables.ts'
import { openStorage } from '../storage/client.ts'
import { migrate } from '../storage/migrate.ts'
import { startSidecar } from '../test/support/sidecar.ts'
import type { BenchRow, BenchScenario } from './table.ts'

const LINE_BYTES = 400
const PAGES = 16
const FIRST_PAGE_REPEATS = 16
const MB = 1e6
const TARGET_RATIO = 0.1

function makeFile(path: string): number {
  const line = `${'x'.repeat(LINE_BYTES - 1)}\n`
  const content = line.repeat(PAGES * MAX_FILE_PAGE_LINES)
  writeFileSync(path, content)
  return content.length
}

/**
 * node:fs baseline, the best a direct reader does: page `index` (0-based) cut from one read of the
 * bytes it needs — the whole file once for the sequential run (pages handed out from memory),
 * the first ~2 MB for the first page.
 */
function fsReader(path: string, pageBytes: number) {
  let whole: string[] | undefined
  return async (index: number, sequential: boolean): Promise<number> => {
    let lines: string[]
    if (sequential) {
      whole ??= (await readFile(path, 'utf8')).split('\n')
      lines = whole.slice(index * MAX_FILE_PAGE_LINES, (index + 1) * MAX_FILE_PAGE_LINES)
    } else {
      const handle = await open(path, 'r')
      try {
        const buffer = Buffer.allocUnsafe(pageBytes + 1)
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
        lines = buffer.subarray(0, bytesRead).toString('utf8').split('\n').slice(0, MAX_FILE_PAGE_LINES)
      } finally {
        await handle.close()
      }
    }
    return lines.join('\n').length
  }
}

async function timed(run: () => Promise<number>): Promise<{ bytes: number; seconds: number }> {
  const start = process.hrtime.bigint()
  const bytes = await run()
  return { bytes, seconds: Number(process.hrtime.bigint() - start) / 1e9 }
}

const scenario: BenchScenario = {
  name: 'files',
  async run(): Promise<BenchRow[]> {
    const dir = realpathSync(mkdtempSync(join(tmpdir(), 'termkeep-bench-files-')))
    const root = join(dir, 'ws')
    mkdirSync(root)
    const file = join(root, 'big.txt')
    makeFile(file)
    const sidecar = await startSidecar({ dataDir: join(dir, 'data') }) // beside the workspace: own state is never served
    const storage = await openStorage({ url: sidecar.databaseUrl })
    await migrate(storage.client)
    const api = await startNodeApi({ storage, sidecarUrl: sidecar.url, sidecarSecret: sidecar.secret, host: '127.0.0.1', port: 0 })
    try {
      await storage.db.insert(workspaces).values({ id: 'w', path: root, title: 'ws', position: 1 })
      await storage.db.insert(sessions).values({ id: 's', cwd: root })
      await storage.db.insert(workspaceSessions).values({ workspaceId: 'w', sessionId: 's', position: 1 })
      const { secret } = await createToken(storage.db, { name: 'bench', grants: ['files:read'], sessions: ['s'] })
      const apiPage = async (index: number) => {
        const offset = index * MAX_FILE_PAGE_LINES + 1
        const response = await fetch(`${api.url}/v1/sessions/s/files/text?path=big.txt&offset=${offset}`, {
          headers: { authorization: `Bearer ${secret}` },
        })
        if (!response.ok) throw new Error(`bench read failed: ${response.status} ${await response.text()}`)
        const page = (await response.json()) as { text: string; lines: number }
        if (page.lines !== MAX_FILE_PAGE_LINES) throw new Error(`short page ${page.lines}`)
        return page.text.length
      }
      const each = async (count: number, read: (i: number) => Promise<number>, same = false) => {
        let total = 0
        for (let i = 0; i < count; i++) total += await read(same ? 0 : i)
        return total
      }
      const fsPage = fsReader(file, LINE_BYTES * MAX_FILE_PAGE_LINES)
      await apiPage(0) // warm up both processes
      const rows: BenchRow[] = []
      for (const [metric, count, same] of [
        ['read pages sequentially (whole file)', PAGES, false],
        ['read the first page repeatedly', FIRST_PAGE_REPEATS, true],
      ] as const) {
        const viaApi = await timed(() => each(count, apiPage, same))
        const direct = await timed(() => each(count, (i) => fsPage(i, !same), same))
        const value = viaApi.bytes / MB / viaApi.seconds
        const baseline = direct.bytes / MB / direct.seconds
        rows.push({
          area: 'files',
          metric,
          value,
          baseline,
          unit: 'MB/s',
          ratio: value / baseline,
          target: `≥ ${TARGET_RATIO}× node:fs`,
          met: value / baseline >= TARGET_RATIO,
          note: `${count} × ~2 MB pages`,
        })
      }
      return rows
    } finally {
      await api.close()
      await sidecar.stop()
      storage.close()
      rmSync(dir, { recursive: true, force: true })
    }
  },
}

export default scenario
