/** The watchers (`watchDirectory`, `follow`) open on each terminal, at most
 * OBSERVE_MAX_WATCHERS_PER_TERMINAL: each holds inotify watches and a descriptor. */
import { TermkeepError } from '../../schema/errors.ts'
import { OBSERVE_MAX_WATCHERS_PER_TERMINAL } from '../../schema/limits.ts'

const open = new WeakMap<object, number>()

/** Takes a slot on `terminal` (409 `observe/limit-reached` when none is left); returns its release. */
export function watching(terminal: object): () => void {
  const count = open.get(terminal) ?? 0
  if (count >= OBSERVE_MAX_WATCHERS_PER_TERMINAL) {
    throw new TermkeepError('observe/limit-reached', `at most ${OBSERVE_MAX_WATCHERS_PER_TERMINAL} watchers per terminal`, {
      limit: OBSERVE_MAX_WATCHERS_PER_TERMINAL,
    })
  }
  open.set(terminal, count + 1)
  let released = false
  return () => {
    if (released) return
    released = true
    open.set(terminal, (open.get(terminal) ?? 1) - 1)
  }
}
