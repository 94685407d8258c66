/**
 * The follow snapshot's screen as addon-serialize writes it, with the history the emulator keeps
 * packed (history-store.ts) serialized as if xterm.js held it: the addon's buffer walker is run
 * over `normalBuffer(terminal)` instead of the terminal's own buffer. Mirrors `serialize()` of
 * @xterm/addon-serialize 0.14.0 (normal buffer, then the alternate one when active, then modes),
 * whose private walkers it calls; it fails loudly if they move.
 */
import type { SerializeAddon } from '@xterm/addon-serialize'
import type { IBuffer, Terminal } from '@xterm/headless'
import { normalBuffer } from './history-store.ts'

interface Walkers {
  _serializeBufferByScrollback(terminal: Terminal, buffer: IBuffer, scrollback: number | undefined): string
  _serializeModes(terminal: Terminal): string
}

export function serializeScreen(serializer: SerializeAddon, terminal: Terminal): string {
  const walkers = serializer as unknown as Partial<Walkers>
  if (typeof walkers._serializeBufferByScrollback !== 'function' || typeof walkers._serializeModes !== 'function') {
    throw new Error('@xterm/addon-serialize internals changed: the snapshot cannot serialize the packed history')
  }
  let screen = walkers._serializeBufferByScrollback(terminal, normalBuffer(terminal), undefined)
  if (terminal.buffer.active.type === 'alternate') {
    screen += `\x1b[?1049h\x1b[H${walkers._serializeBufferByScrollback(terminal, terminal.buffer.alternate, undefined)}`
  }
  return screen + walkers._serializeModes(terminal)
}
