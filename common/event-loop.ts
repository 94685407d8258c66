/**
 * Cooperative yielding for work the API does in slices (large request bodies, resources stored
 * in parts). Awaiting an already-settled promise does not let other requests run (microtasks run
 * first), and the embedded database driver answers synchronously, so long work must give the
 * event loop a macrotask turn itself. setTimeout is the Web API every runtime has.
 */
export function yieldToLoop(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 0))
}
