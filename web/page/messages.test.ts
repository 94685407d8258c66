/** The page's words for a failed action: the server's message, or that it is unreachable. */
import { describe, expect, it } from 'vitest'
import { ApiError, UnreachableError } from '../client/api.ts'
import { failure } from './dom.ts'

describe('failure', () => {
  it("gives the server's own message for a refused request", () => {
    expect(failure('Could not rename', new ApiError(409, 'workspace/name-conflict', 'a workspace is already titled "x"'))).toBe(
      'Could not rename: a workspace is already titled "x"',
    )
  })

  it("says the server is not reachable, not the error's class or a fetch message", () => {
    const text = failure('Could not list terminals', new UnreachableError('this page’s origin', new TypeError('Failed to fetch')))
    expect(text).toBe('Could not list terminals: the termkeep server is not reachable. Check that it runs, then try again.')
    expect(text).not.toMatch(/UnreachableError|Failed to fetch/)
  })

  it("never prints an exception's class name for anything else", () => {
    expect(failure('Could not close', new TypeError('boom'))).toBe('Could not close: boom')
  })
})
