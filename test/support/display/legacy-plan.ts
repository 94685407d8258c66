/**
 * REFERENCE ONLY (tests): the chunk planner exactly as it was before incremental revisions
 * (issue 18), kept so tests can prove that the incremental store + the API's reassembly stream
 * byte-for-byte what the whole-revision encoder streamed. Do not use in production code.
 */
import type { CellStyle, EncodedRow, Region } from '../../../schema/wire/display.ts'

export interface PlannedRow {
  region: Region
  row: EncodedRow
  /** Style-table entries this row uses first (ids continue the table in order). */
  styles: CellStyle[]
}

export interface ChunkPlan {
  /** `rows` event bodies (JSON text), in order. */
  chunks: string[]
  viewportRows: number
  alternateRows: number
  historyRows: number
  truncated: boolean
  /** Sum of the chunks' UTF-8 byte lengths. */
  encodedBytes: number
}

const bytes = (s: string) => Buffer.byteLength(s)
const NO_STYLES: string[] = []

/** A row too large for one event on its own keeps only its text, cut to fit (never happens at sane sizes). */
function degrade(row: EncodedRow, room: number): string {
  let text = ''
  for (let i = 2; i < row.length; i += 2) {
    const c = row[i]
    text += typeof c === 'number' ? ' '.repeat(c) : Array.isArray(c) ? c.join('') : c
  }
  let json = JSON.stringify([row[0], 0, text])
  while (bytes(json) > room && text.length > 0) {
    text = text.slice(0, Math.floor(text.length / 2))
    json = JSON.stringify([row[0], 0, text])
  }
  return json
}

export function legacyPlanChunks(rows: Iterable<PlannedRow>, budget: number, eventLimit: number): ChunkPlan {
  const plan: ChunkPlan = { chunks: [], viewportRows: 0, alternateRows: 0, historyRows: 0, truncated: false, encodedBytes: 0 }
  const counts: Record<Region, number> = { viewport: 0, alternate: 0, history: 0 }
  let styleCount = 1 // id 0, the default style, is implicit
  // The open chunk.
  let region: Region | undefined
  let index = 0
  let styleBase = 0
  let styleParts: string[] = []
  let rowParts: string[] = []
  let openBytes = 0

  const envelope = (r: Region, i: number, base: number) => `{"region":"${r}","index":${i},"styleBase":${base},"styles":[],"rows":[]}`
  const close = () => {
    if (region === undefined) return
    const body = `{"region":"${region}","index":${index},"styleBase":${styleBase},"styles":[${styleParts.join(',')}],"rows":[${rowParts.join(',')}]}`
    plan.chunks.push(body)
    plan.encodedBytes += bytes(body)
    region = undefined
  }

  for (const planned of rows) {
    const styleJson = planned.styles.length === 0 ? NO_STYLES : planned.styles.map((s) => JSON.stringify(s))
    let styleBytes = 0
    for (const s of styleJson) styleBytes += bytes(s) + 1
    let rowJson = JSON.stringify(planned.row)
    let rowBytes = bytes(rowJson) + 1
    const sameChunk = region === planned.region && openBytes + styleBytes + rowBytes <= eventLimit
    const freshBytes = sameChunk ? 0 : bytes(envelope(planned.region, counts[planned.region], styleCount)) + styleBytes
    if (!sameChunk && freshBytes + rowBytes > eventLimit) {
      rowJson = degrade(planned.row, eventLimit - freshBytes - 1)
      rowBytes = bytes(rowJson) + 1
    }
    const added = sameChunk ? styleBytes + rowBytes : freshBytes + rowBytes
    if (planned.region === 'history' && plan.encodedBytes + (region ? openBytes : 0) + added > budget) {
      plan.truncated = true
      break
    }
    if (!sameChunk) {
      close()
      region = planned.region
      index = counts[planned.region]
      styleBase = styleCount
      styleParts = []
      rowParts = []
      openBytes = bytes(envelope(region, index, styleBase))
    }
    styleParts.push(...styleJson)
    rowParts.push(rowJson)
    openBytes += styleBytes + rowBytes
    styleCount += planned.styles.length
    counts[planned.region]++
  }
  close()
  plan.viewportRows = counts.viewport
  plan.alternateRows = counts.alternate
  plan.historyRows = counts.history
  return plan
}
