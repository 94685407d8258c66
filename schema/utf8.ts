/**
 * How the contract measures text: every byte limit on text (input, scripts, display events) counts
 * UTF-8 bytes. Pure, no TextEncoder: the validators, the display packer and the stores all count
 * the same way on every runtime.
 */

/** UTF-8 byte length (what Buffer.byteLength gives; a lone surrogate counts as U+FFFD, 3 bytes). */
export function utf8Length(s: string): number {
  let n = s.length
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c < 0x80) continue
    if (c < 0x800) n += 1
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      n += 2 // four bytes for the pair's two code units
      i++
    } else n += 2
  }
  return n
}
