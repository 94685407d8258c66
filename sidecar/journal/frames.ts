/**
 * Output items in SSE framing, written straight into one buffer (the watchOutput hot path).
 */
import { sseFrame } from '../../common/sse.ts'
import { SseFrames } from '../http/sse.ts'
import type { ItemPlan } from './coalesce.ts'

/**
 * SSE frames for planned items and their raw bytes (as `Journal.readPlanned` returns them), in one
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
    at += out.write(bytes.toString('base64', from, from + p.length), at, 'latin1')
    from += p.length
    at += out.write(DATA_TAIL, at, 'latin1')
  })
  return new SseFrames(out)
}

const DATA_TAIL = '"}\n\n'
