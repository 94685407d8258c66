/**
 * Output items in SSE framing, written straight into one buffer (the watchOutput hot path).
 */
import { sseFrame } from '../../common/sse.ts'
import { SseFrames } from '../http/sse.ts'
import type { ItemPlan } from './coalesce.ts'

/**
 * SSE frames for planned items and their raw bytes (as `Journal.usePlanned` gives them), in one
 * buffer: each Data item is `event: data`, `id: N`, `data: {"sequence":N,"data":"<base64>"}` —
 * byte for byte what sseFrame gives for that event — with the base64 written in place. Only
 * ASCII is written here; a Resize goes through sseFrame.
 */
export function frameItems(plans: readonly ItemPlan[], bytes: Buffer): SseFrames {
  const heads: string[] = []
  let total = 0
  for (const p of plans) {
    const head =
      p.kind === 'data'
        ? `event: data\nid: ${p.last}\ndata: {"sequence":${p.last},"data":"`
        : sseFrame({ event: 'resize', id: p.last, data: { sequence: p.last, cols: p.cols, rows: p.rows } })
    heads.push(head)
    total += head.length + (p.kind === 'data' ? 4 * Math.ceil(p.length / 3) + DATA_TAIL.length : 0)
  }
  const out = Buffer.allocUnsafe(total)
  let at = 0
  let from = 0
  plans.forEach((p, i) => {
    at += out.write(heads[i], at, 'latin1')
    if (p.kind !== 'data') return
    const end = from + p.length
    for (let piece = from; piece < end; piece += BASE64_CHUNK_BYTES) {
      at += out.write(bytes.toString('base64', piece, Math.min(end, piece + BASE64_CHUNK_BYTES)), at, 'latin1')
    }
    from = end
    at += out.write(DATA_TAIL, at, 'latin1')
  })
  return new SseFrames(out)
}

const DATA_TAIL = '"}\n\n'

/**
 * Raw bytes encoded per base64 string (a multiple of 3, so the pieces join without padding). One
 * string per item of up to 1 MiB was a 1.4 MB string: V8 puts a string over 128 KiB straight into
 * the old generation, and a flood's strings started a full (incremental) mark-compact of the main
 * thread's heap every 100–300 ms (--trace-gc). At 64 KiB of base64 a string is young and dies in
 * a scavenge.
 */
const BASE64_CHUNK_BYTES = 48 * 1024
