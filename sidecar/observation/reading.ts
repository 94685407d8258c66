/**
 * Bounded reads of a file handle: its first bytes, the whole file as JSON, or one JSON Lines
 * record (the first, or the last complete one). Every read goes to the verified descriptor.
 */
import type * as v from 'valibot'
import type { FileBytes, JsonValue, ReadJsonLineRequest, ReadRequest } from '../../schema/wire/observation.ts'
import { readAt } from '../files/operations.ts'
import type { ObservedTerminal } from './observed.ts'
import { withHandle } from './roots.ts'

/** The first `maxBytes` bytes as of the open's stat (bytes appended meanwhile wait for the next). */
export async function readFile(view: ObservedTerminal, r: v.InferOutput<typeof ReadRequest>): Promise<FileBytes> {
  return withHandle(view, r.handle, 'f', async (opened) => {
    const size = Number(opened.stats.size)
    const data = await readAt(opened.handle, 0, Math.min(r.maxBytes, size))
    return { data: data.toString('base64'), size, truncated: size > r.maxBytes }
  })
}

/** Pure: JSON text as a value, or null when it is not JSON. */
function parseJson(text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

export async function readJson(view: ObservedTerminal, r: v.InferOutput<typeof ReadRequest>): Promise<JsonValue> {
  return withHandle(view, r.handle, 'f', async (opened) => {
    const size = Number(opened.stats.size)
    // A file larger than maxBytes cannot be parsed whole: it is not JSON within the bound.
    if (size > r.maxBytes) return { value: null }
    return { value: parseJson((await readAt(opened.handle, 0, size)).toString('utf8')) }
  })
}

/**
 * Pure: one record of a JSON Lines window. `startsAtLine`: the window begins at a line start (the
 * file's start), else its first line is a fragment. `endsAtEof`: nothing follows the window.
 * `first` is the first complete line; `last` is the last non-empty complete line, where a final
 * line without a newline counts only if it parses (a writer may be in the middle of it).
 */
export function jsonLineOf(window: Buffer, position: 'first' | 'last', startsAtLine: boolean, endsAtEof: boolean): unknown {
  const text = window.toString('utf8')
  const lines = text.split('\n')
  if (!startsAtLine) lines.shift()
  const unterminated = lines.pop() ?? '' // after the last newline: a partial line, or ''
  if (position === 'first') {
    const first = lines.find((line) => line.trim() !== '')
    if (first !== undefined) return parseJson(first)
    return endsAtEof && unterminated.trim() !== '' ? parseJson(unterminated) : null
  }
  if (endsAtEof && unterminated.trim() !== '') {
    const value = parseJson(unterminated)
    if (value !== null) return value
  }
  for (let i = lines.length - 1; i >= 0; i--) if (lines[i].trim() !== '') return parseJson(lines[i])
  return null
}

export async function readJsonLine(view: ObservedTerminal, r: v.InferOutput<typeof ReadJsonLineRequest>): Promise<JsonValue> {
  return withHandle(view, r.handle, 'f', async (opened) => {
    const size = Number(opened.stats.size)
    const from = r.position === 'first' ? 0 : Math.max(0, size - r.maxBytes)
    const window = await readAt(opened.handle, from, Math.min(r.maxBytes, size - from))
    return { value: jsonLineOf(window, r.position, from === 0, from + window.length >= size) }
  })
}
