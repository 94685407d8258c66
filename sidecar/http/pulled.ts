/**
 * A response body pulled from an async generator: the body asks it for the next chunk only when
 * the client has taken the previous one (the socket drained), so a slow or stalled client holds
 * at most one chunk here, never a growing queue. Shared by every streamed answer (SSE, asciicast).
 */
export type ChunkSource<T> = (signal: AbortSignal) => AsyncGenerator<T, void, void>

/**
 * Starts the generator and waits for its first chunk before answering, so a failure at the start
 * (a typed error, a replay I/O error) fails the call with a proper status instead of a broken
 * stream; a failure later errors the body (the client sees a cut transfer, never a clean end).
 * The generator gets a signal that aborts when the client goes away.
 */
export async function pulledResponse<T>(
  source: ChunkSource<T>,
  toBytes: (chunk: T) => Uint8Array,
  headers: Record<string, string>,
  requestSignal?: AbortSignal,
): Promise<Response> {
  const abort = new AbortController()
  const onRequestAbort = () => abort.abort()
  requestSignal?.addEventListener('abort', onRequestAbort, { once: true })
  const chunks = source(abort.signal)
  let pending: IteratorResult<T, void> | undefined
  try {
    pending = await chunks.next()
  } catch (error) {
    requestSignal?.removeEventListener('abort', onRequestAbort)
    throw error
  }
  const finish = () => {
    requestSignal?.removeEventListener('abort', onRequestAbort)
    abort.abort()
    void chunks.return(undefined).catch(() => {})
  }
  const body = new ReadableStream<Uint8Array>(
    {
      async pull(controller) {
        try {
          // One chunk per stream per event-loop turn. A socket that takes a write at once asks for
          // the next chunk within the same turn (its 'drain' comes on process.nextTick), and a
          // chunk read from memory (the last flush, a shared batch) needs no I/O either, so one
          // stream could otherwise go on writing for seconds while no request, health included,
          // was even read.
          if (!pending) await nextTurn()
          const next = pending ?? (await chunks.next())
          pending = undefined
          if (next.done) {
            controller.close()
            finish()
          } else {
            controller.enqueue(toBytes(next.value))
          }
        } catch (error) {
          finish()
          controller.error(error)
        }
      },
      cancel: finish,
    },
    { highWaterMark: 0 },
  )
  return new Response(body, { headers })
}

/** Resolves in the check phase of the event loop, after the pending I/O of this turn was polled. */
function nextTurn(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve))
}
