/**
 * The sidecar's end of a script process's channel: newline-delimited JSON over a plain pipe (the
 * child's fd 3), never Node's IPC. Node's IPC channel acts on messages of its own (a `cmd` that
 * starts with `NODE_`) before any listener sees them, and one of them, sent unasked, throws an
 * internal assertion in the parent: the sidecar would die of one line from code that escaped the
 * engine. It also buffers a message of any length. Here a line is only data, and one longer than
 * WORKFLOW_SCRIPT_MESSAGE_MAX_BYTES ends the channel.
 *
 * Hand-written: node:readline has no bound on a line's length.
 */
import type { Readable } from 'node:stream'

/** What the script process did that no honest one does: ScriptProcess hands it to the run as a message no JSON can make. */
export class ProtocolViolation extends Error {}

/**
 * Calls `onLine` with each line's text (UTF-8); calls `onViolation` once, and reads no more, when a
 * line is longer than `maxBytes`.
 */
export function readLines(stream: Readable, maxBytes: number, onLine: (line: string) => void, onViolation: (why: string) => void): void {
  let parts: Buffer[] = []
  let size = 0
  let broken = false
  const tooLong = () => {
    broken = true
    parts = []
    stream.off('data', onData)
    stream.destroy()
    onViolation(`the script process sent a message over ${maxBytes} bytes`)
  }
  const onData = (chunk: Buffer) => {
    let start = 0
    for (let at = chunk.indexOf(0x0a); at >= 0 && !broken; at = chunk.indexOf(0x0a, start)) {
      if (size + (at - start) > maxBytes) return tooLong()
      parts.push(chunk.subarray(start, at))
      const line = Buffer.concat(parts).toString('utf8')
      parts = []
      size = 0
      start = at + 1
      onLine(line)
    }
    if (broken) return
    size += chunk.length - start
    if (size > maxBytes) return tooLong()
    if (start < chunk.length) parts.push(chunk.subarray(start))
  }
  stream.on('data', onData)
}
