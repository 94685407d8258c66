/**
 * Staging one readDisplay transfer (contract: schema/wire/display.ts), for every client: `begin`,
 * the ordered `rows`, then `end`. A display comes out only when `end` arrived for the staged
 * `begin` with every `rows` event it announced; an interrupted or cancelled transfer yields
 * nothing, so a caller keeps showing what it had. The result feeds `replayAnsi` (replay.ts) to
 * rebuild the screen in a fresh terminal. The page and the CLI stage through web/client/display.ts.
 */
import type { DisplayBegin, DisplayEnd, RowsEvent } from '../../schema/wire/display.ts'
import { decodeDisplay, type DecodedDisplay } from './decode.ts'

export class DisplayStaging {
  #begin: DisplayBegin | undefined
  #parts: RowsEvent[] = []
  #end: DisplayEnd | undefined

  /** Takes one event of the transfer, its data parsed (other event names are ignored). A `begin`
   * starts over. */
  accept(event: string, data: unknown): void {
    if (event === 'begin') {
      this.#begin = data as DisplayBegin
      this.#parts = []
      this.#end = undefined
    } else if (event === 'rows' && this.#begin) this.#parts.push(data as RowsEvent)
    else if (event === 'end' && this.#begin) this.#end = data as DisplayEnd
  }

  /** The display, once `end` arrived for the staged `begin` and every `rows` event with it;
   * otherwise undefined (discard). */
  finish(): DecodedDisplay | undefined {
    if (!this.#begin || !this.#end || this.#end.revision !== this.#begin.revision) return undefined
    if (this.#parts.length !== this.#begin.chunks) return undefined
    return decodeDisplay(this.#begin, this.#parts, this.#end)
  }
}
