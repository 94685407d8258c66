/**
 * `npm run bench`: runs every scenario once, side by side with its baseline in the same run, and
 * prints one table. Usage: npm run bench [-- scenario-name ...]
 */
import { renderTable, type BenchRow, type BenchScenario } from './table.ts'

// Each area registers its scenario module here.
const SCENARIOS: Array<() => Promise<{ default: BenchScenario }>> = [
  () => import('./api.ts'),
  () => import('./echo.ts'),
  () => import('./files.ts'),
  () => import('./journal.ts'),
  () => import('./display.ts'),
  () => import('./observation.ts'),
  () => import('./display-scale.ts'),
  () => import('./mcp.ts'),
  () => import('./commands.ts'),
  () => import('./workflows.ts'),
  () => import('./hosts.ts'),
]

const wanted = new Set(process.argv.slice(2))
const rows: BenchRow[] = []
for (const load of SCENARIOS) {
  const { default: scenario } = await load()
  if (wanted.size > 0 && !wanted.has(scenario.name)) continue
  console.error(`bench: ${scenario.name} …`)
  rows.push(...(await scenario.run()))
}
console.log(renderTable(rows))
