/** One benchmark result row: a measurement side by side with its baseline from the same run. */
export interface BenchRow {
  /** Which issue area: journal, display, api, files, … */
  area: string
  metric: string
  /** termkeep's number, with unit in `unit`. */
  value: number
  /** The baseline measured in the same run (undefined when the row is absolute). */
  baseline?: number
  unit: string
  /** value / baseline, or the row's own figure of merit. */
  ratio?: number
  /** The target, in words (e.g. "≥ 0.9×"). */
  target: string
  /** Whether the target was met. */
  met: boolean
  note?: string
}

export interface BenchScenario {
  name: string
  run(): Promise<BenchRow[]>
}

function fmt(n: number | undefined): string {
  if (n === undefined) return '—'
  if (Math.abs(n) >= 100) return n.toFixed(0)
  if (Math.abs(n) >= 10) return n.toFixed(1)
  return n.toFixed(2)
}

/** Renders rows as one Markdown table (printed, and pasted into docs/benchmarks.md). */
export function renderTable(rows: BenchRow[]): string {
  const header = '| area | metric | termkeep | baseline | unit | ratio | target | met |'
  const rule = '|---|---|---|---|---|---|---|---|'
  const lines = rows.map(
    (r) =>
      `| ${r.area} | ${r.metric}${r.note ? ` (${r.note})` : ''} | ${fmt(r.value)} | ${fmt(r.baseline)} | ${r.unit} | ${
        r.ratio === undefined ? '—' : `${fmt(r.ratio)}×`
      } | ${r.target} | ${r.met ? 'yes' : '**no**'} |`,
  )
  return [header, rule, ...lines].join('\n')
}
