/**
 * The host's own bounds on what a script process sends, whatever the guest checked first: the
 * process may not be running the guest at all (code that escaped the engine), and the guest may
 * be fooled (a getter that answers a second read differently).
 */

/** Pure: `text` within `max` bytes of UTF-8, cut (never inside a character) and saying so. */
export function within(text: string, max: number): string {
  if (Buffer.byteLength(text) <= max) return text
  const note = ` … (cut at ${max} bytes)`
  const bytes = Buffer.from(text)
  let end = max - Buffer.byteLength(note)
  while (end > 0 && (bytes[end] & 0xc0) === 0x80) end-- // bytes[end] continues a character: cut before it
  return bytes.subarray(0, end).toString('utf8') + note
}

/** Pure: whether `value` (parsed JSON) nests more than `max` arrays and objects. Iterative: V8's
 * own JSON.stringify, which would store it, throws past about 4,000 levels. */
export function nestsDeeper(value: unknown, max: number): boolean {
  const pending: [unknown, number][] = [[value, 1]]
  while (pending.length > 0) {
    const [item, depth] = pending.pop()!
    if (typeof item !== 'object' || item === null) continue
    if (depth > max) return true
    for (const child of Object.values(item)) pending.push([child, depth + 1])
  }
  return false
}
