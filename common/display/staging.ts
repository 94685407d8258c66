/**
 * Client side of readDisplay, for any runtime with fetch (browsers, Node, Deno, Workers): stage
 * `begin` and every `rows`, and produce a display only when `end` arrives. A transfer that breaks
 * off before `end` yields nothing, so a caller keeps showing what it had. The result feeds
 * `replayAnsi` (common/display/replay.ts) to rebuild the screen exactly in a fresh terminal.
 * (The bundled web page has its own equivalent in web/client/display.ts.)
 */
import type { DisplayBegin, DisplayEnd, RowsEvent } from '../../schema/wire/display.ts'
import { decodeDisplay, type DecodedDisplay } from './decode.ts'

export class DisplayStager {
  #begin: DisplayBegin | undefined
  #parts: RowsEvent[] = []
  #end: DisplayEnd | undefined

  /** Takes one SSE event of the transfer (other event names are ignored). */
  accept(event: string, data: string): void {
    if (event === 'begin') {
      this.#begin = JSON.parse(data) as DisplayBegin
      this.#parts = []
      this.#end = undefined
    } else if (event === 'rows' && this.#begin) this.#parts.push(JSON.parse(data) as RowsEvent)
    else if (event === 'end' && this.#begin) this.#end = JSON.parse(data) as DisplayEnd
  }

  /** The display, once `end` arrived for the staged `begin`; otherwise undefined (discard). */
  finish(): DecodedDisplay | undefined {
    if (!this.#begin || !this.#end || this.#end.revision !== this.#begin.revision) return undefined
    if (this.#parts.length !== this.#begin.chunks) return undefined
    return decodeDisplay(this.#begin, this.#parts, this.#end)
  }
}

/**
 * Reads a readDisplay response body to its `end`. Resolves with the display, or rejects when the
 * stream ended (or was aborted) before `end` — the staged parts are dropped.
 */
export async function readDisplayResponse(response: Response): Promise<DecodedDisplay> {
  if (!response.ok || !response.body) throw new Error(`readDisplay answered ${response.status}`)
  const stager = new DisplayStager()
  const reader = response.body.getReader()
  const decoder = new TextDecoder()
  let buffer = ''
  for (;;) {
    const { done, value } = await reader.read()
    if (value) buffer += decoder.decode(value, { stream: true })
    let at: number
    while ((at = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, at)
      buffer = buffer.slice(at + 2)
      let event = 'message'
      let data = ''
      for (const line of block.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim()
        else if (line.startsWith('data:')) data += (data ? '\n' : '') + line.slice(line.startsWith('data: ') ? 6 : 5)
      }
      if (data) stager.accept(event, data)
      if (event === 'end') {
        await reader.cancel().catch(() => {})
        const display = stager.finish()
        if (!display) throw new Error('the display transfer was incomplete')
        return display
      }
    }
    if (done) throw new Error('the display transfer ended before `end`; discarded')
  }
}
