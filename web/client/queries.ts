/**
 * Removes terminal queries from bytes that are being replayed into a real terminal
 * (`termkeep attach` after a reconnect). A query printed long ago — device attributes, status and
 * cursor position reports, mode and setting requests, version, window and colour reports — would
 * otherwise be answered by the user's terminal, and the answer would arrive on stdin and be typed
 * into the remote shell. The page does not need this (its ReplayGuard silences xterm.js itself).
 *
 * Works per chunk on the bytes as Latin-1 (one char per byte, so UTF-8 text passes unchanged); a
 * query split across two chunks is not recognized (replayed chunks are whole PTY reads).
 */

const QUERY = new RegExp(
  [
    String.raw`\x1b\[[>=]?[0-9;]*c`, // DA1, DA2, DA3
    String.raw`\x1b\[\??[0-9;]*n`, // DSR, CPR, DECDSR
    String.raw`\x1b\[\??[0-9;]*\$p`, // DECRQM
    String.raw`\x1b\[>[0-9;]*q`, // XTVERSION
    String.raw`\x1b\[(?:11|13|14|15|16|18|19|20|21)(?:;[0-9]*)*t`, // window reports
    String.raw`\x1bP[$+]q[^\x1b\x07]*(?:\x1b\\|\x07)`, // DECRQSS, XTGETTCAP
    String.raw`\x1b\](?:4;[0-9]+|1[0-9]);\?(?:\x07|\x1b\\)`, // colour queries
  ].join('|'),
  'g',
)

export function stripQueries(bytes: Uint8Array): Uint8Array {
  let text = ''
  for (let i = 0; i < bytes.length; i += 8192) text += String.fromCharCode(...bytes.subarray(i, i + 8192))
  const stripped = text.replace(QUERY, '')
  if (stripped.length === text.length) return bytes
  return Uint8Array.from(stripped, (c) => c.charCodeAt(0))
}
