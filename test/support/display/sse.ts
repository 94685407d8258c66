/** Reads a whole (finite) SSE response into events; comments (heartbeats) are skipped. */
export interface SseMessage {
  event: string
  data: string
}

export async function readAllEvents(response: Response): Promise<SseMessage[]> {
  const text = await response.text()
  const events: SseMessage[] = []
  for (const block of text.split('\n\n')) {
    let event = 'message'
    const data: string[] = []
    for (const line of block.split('\n')) {
      if (line.startsWith('event: ')) event = line.slice(7)
      else if (line.startsWith('data: ')) data.push(line.slice(6))
    }
    if (data.length > 0) events.push({ event, data: data.join('\n') })
  }
  return events
}
