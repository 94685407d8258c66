/**
 * `follow` cursors: where a reader stopped, so a reconnecting reader goes on from exactly there
 * (schema/wire/observation.ts FollowCursor). Every follow event's id is the cursor after it:
 *
 *   c1.<offset>.<file>.<tail>.<tag>
 *
 * - `offset`: how many bytes of the file being read the reader has (the content since the last
 *   `truncate` / `replace`);
 * - `file`: a keyed digest of that file's identity (device, inode, birth time), so resuming can
 *   tell whether the path still names it — if not, the reader gets `replace` — without showing
 *   the identity itself (handles keep it opaque too);
 * - `tail`: a keyed digest of the last bytes before the offset (at most FOLLOW_TAIL_BYTES, as the
 *   follower keeps them), so a file rewritten in place, or cut shorter, answers `truncate`
 *   instead of bytes from the middle of something else;
 * - `tag`: HMAC over the rest and the handle's id: a cursor is good only with the handle whose
 *   follow gave it, and cannot be forged or altered (400 `observe/cursor-invalid`).
 *
 * Digests are HMAC-SHA-256 with a key derived from the sidecar secret like the handles' keys, cut
 * to 128 bits: a cursor is compared, never decrypted, so it needs no more than that.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { TermkeepError } from '../../schema/errors.ts'
import type { ObjectIdentity } from './handles.ts'
import { observationKey } from './handles.ts'

/** How a resumed follow starts: its offset, and tests of a file's identity and of the bytes
 * just before the offset against what the reader had. */
export interface ResumePoint {
  offset: number
  isFile(identity: ObjectIdentity): boolean
  isTail(bytes: Uint8Array): boolean
}

const FORMAT = /^c1\.(\d{1,16})\.([\w-]{22})\.([\w-]{22})\.([\w-]{22})$/
const DIGEST_BYTES = 16

const invalid = () =>
  new TermkeepError('observe/cursor-invalid', 'this cursor was not given by a follow of this handle (send an event id back as it came)')

export class FollowCursors {
  readonly #key: Buffer

  constructor(secret: string) {
    this.#key = observationKey(secret, 'observation-follow-cursor')
  }

  /** The cursor after `offset` bytes of `file` whose last bytes are `tail`, for `handleId`. */
  mint(handleId: string, file: ObjectIdentity, offset: number, tail: Uint8Array): string {
    const body = `${offset}.${this.#fileDigest(handleId, file)}.${this.#tailDigest(handleId, offset, tail)}`
    return `c1.${body}.${this.#digest('tag', handleId, body)}`
  }

  /** The resume point of a cursor this class minted for `handleId`; 400 for any other. */
  open(handleId: string, cursor: string): ResumePoint {
    const match = FORMAT.exec(cursor)
    if (!match) throw invalid()
    const [, offsetText, file, tail, tag] = match as unknown as [string, string, string, string, string]
    if (!same(tag, this.#digest('tag', handleId, `${offsetText}.${file}.${tail}`))) throw invalid()
    const offset = Number(offsetText)
    if (!Number.isSafeInteger(offset)) throw invalid()
    return {
      offset,
      isFile: (identity) => same(file, this.#fileDigest(handleId, identity)),
      isTail: (bytes) => same(tail, this.#tailDigest(handleId, offset, bytes)),
    }
  }

  #fileDigest(handleId: string, file: ObjectIdentity): string {
    return this.#digest('file', handleId, `${file.dev}:${file.ino}:${file.born}`)
  }

  #tailDigest(handleId: string, offset: number, tail: Uint8Array): string {
    return this.#digest('tail', handleId, String(offset), tail)
  }

  #digest(purpose: string, handleId: string, text: string, bytes?: Uint8Array): string {
    const mac = createHmac('sha256', this.#key).update(`${purpose}\0${handleId}\0${text}\0`)
    if (bytes) mac.update(bytes)
    return mac.digest().subarray(0, DIGEST_BYTES).toString('base64url')
  }
}

/** Constant-time equality of two digests in their text form. */
function same(a: string, b: string): boolean {
  const x = Buffer.from(a)
  const y = Buffer.from(b)
  return x.length === y.length && timingSafeEqual(x, y)
}
