/** A minimal incremental SSE reader for smoke checks: events are handed out as their bytes arrive. */

export interface SseEvent {
  event: string
  data: string
  id?: string
}

export interface SseReader {
  /** The next event; rejects when the stream ends first or `timeoutMs` passes. */
  next(timeoutMs?: number): Promise<SseEvent>
  /** Every remaining event until the stream ends. */
  rest(timeoutMs?: number): Promise<SseEvent[]>
  close(): Promise<void>
}

function parse(block: string): SseEvent | undefined {
  let event = 'message'
  let id: string | undefined
  const data: string[] = []
  for (const line of block.split('\n')) {
    if (line === '' || line.startsWith(':')) continue
    const colon = line.indexOf(':')
    const field = colon < 0 ? line : line.slice(0, colon)
    const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '')
    if (field === 'event') event = value
    else if (field === 'data') data.push(value)
    else if (field === 'id') id = value
  }
  return data.length > 0 || event !== 'message' ? { event, data: data.join('\n'), id } : undefined
}

export function readSse(response: Response): SseReader {
  if (!response.body) throw new Error('SSE response without a body')
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader()
  let buffer = ''
  let ended = false
  const queue: SseEvent[] = []

  async function pull(deadline: number): Promise<void> {
    let timer: ReturnType<typeof setTimeout> | undefined
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error('timed out waiting for an SSE event')), Math.max(0, deadline - Date.now()))
    })
    try {
      const { value, done } = await Promise.race([reader.read(), timeout])
      if (done) {
        ended = true
        return
      }
      buffer += value.replace(/\r\n?/g, '\n')
      let end: number
      while ((end = buffer.indexOf('\n\n')) >= 0) {
        const event = parse(buffer.slice(0, end))
        buffer = buffer.slice(end + 2)
        if (event) queue.push(event)
      }
    } finally {
      clearTimeout(timer)
    }
  }

  return {
    async next(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (queue.length === 0) {
        if (ended) throw new Error('the SSE stream ended before the next event')
        await pull(deadline)
      }
      return queue.shift()!
    },
    async rest(timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs
      while (!ended) await pull(deadline)
      return queue.splice(0)
    },
    close: () => reader.cancel().catch(() => undefined),
  }
}
