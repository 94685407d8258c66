/**
 * Length-prefixed frames over a byte stream (protocol.ts): encoding, and a reader that cuts a
 * stream's chunks into whole frames. A frame's payload is a view into what was read (copied only
 * when a frame spans chunks).
 */
import {
  FRAME_INPUT,
  FRAME_JSON,
  FRAME_KEYED_INPUT,
  FRAME_RECORDS,
  type KeptInputKey,
  MAX_FRAME_BYTES,
  RECORDS_HEADER_BYTES,
} from './protocol.ts'

export interface Frame {
  kind: number
  payload: Buffer
}

export class FrameError extends Error {
  override name = 'FrameError'
}

export function jsonFrame(message: unknown): Buffer {
  const body = Buffer.from(JSON.stringify(message))
  const head = Buffer.allocUnsafe(5)
  head.writeUInt32LE(body.length + 1, 0)
  head.writeUInt8(FRAME_JSON, 4)
  return Buffer.concat([head, body])
}

/** The header of an INPUT frame; the bytes follow it on the stream. */
export function inputHeader(id: number, bytes: number): Buffer {
  const head = Buffer.allocUnsafe(9)
  head.writeUInt32LE(bytes + 5, 0)
  head.writeUInt8(FRAME_INPUT, 4)
  head.writeUInt32LE(id, 5)
  return head
}

/** The header of a KEYED_INPUT frame (with the key's JSON); the bytes follow it. */
export function keyedInputHeader(id: number, key: KeptInputKey, bytes: number): Buffer {
  const json = Buffer.from(JSON.stringify(key))
  const head = Buffer.allocUnsafe(11)
  head.writeUInt32LE(1 + 4 + 2 + json.length + bytes, 0)
  head.writeUInt8(FRAME_KEYED_INPUT, 4)
  head.writeUInt32LE(id, 5)
  head.writeUInt16LE(json.length, 9)
  return Buffer.concat([head, json])
}

export function parseKeyedInput(payload: Buffer): { id: number; key: KeptInputKey; bytes: Buffer } {
  if (payload.length < 6) throw new FrameError('short KEYED_INPUT frame')
  const length = payload.readUInt16LE(4)
  if (payload.length < 6 + length) throw new FrameError('KEYED_INPUT frame of the wrong length')
  const key = parseJson(payload.subarray(6, 6 + length)) as KeptInputKey
  if (typeof key?.id !== 'string' || typeof key.fingerprint !== 'string' || typeof key.at !== 'number') {
    throw new FrameError('a KEYED_INPUT frame without a key')
  }
  return { id: payload.readUInt32LE(0), key, bytes: payload.subarray(6 + length) }
}

/** The header and entries of a RECORDS frame; `bytes` (the Data bytes, or 0) follow it. */
export function recordsHead(id: number, first: number, count: number, entries: Buffer, bytes: number): Buffer {
  const head = Buffer.allocUnsafe(5 + RECORDS_HEADER_BYTES)
  head.writeUInt32LE(1 + RECORDS_HEADER_BYTES + entries.length + bytes, 0)
  head.writeUInt8(FRAME_RECORDS, 4)
  head.writeUInt32LE(id, 5)
  head.writeDoubleLE(first, 9)
  head.writeUInt32LE(count, 17)
  head.writeUInt32LE(bytes, 21)
  return Buffer.concat([head, entries])
}

export interface Records {
  id: number
  first: number
  count: number
  entries: Buffer
  bytes: Buffer | undefined
}

export function parseRecords(payload: Buffer, entryBytes: number): Records {
  if (payload.length < RECORDS_HEADER_BYTES) throw new FrameError('short RECORDS frame')
  const id = payload.readUInt32LE(0)
  const first = payload.readDoubleLE(4)
  const count = payload.readUInt32LE(12)
  const byteCount = payload.readUInt32LE(16)
  const entriesEnd = RECORDS_HEADER_BYTES + count * entryBytes
  if (payload.length !== entriesEnd + byteCount) throw new FrameError('RECORDS frame of the wrong length')
  const entries = payload.subarray(RECORDS_HEADER_BYTES, entriesEnd)
  return { id, first, count, entries, bytes: byteCount > 0 ? payload.subarray(entriesEnd) : undefined }
}

export function parseInput(payload: Buffer): { id: number; bytes: Buffer; key?: KeptInputKey } {
  if (payload.length < 4) throw new FrameError('short INPUT frame')
  return { id: payload.readUInt32LE(0), bytes: payload.subarray(4) }
}

export function parseJson(payload: Buffer): unknown {
  try {
    return JSON.parse(payload.toString('utf8'))
  } catch {
    throw new FrameError('a JSON frame that does not parse')
  }
}

/** Cuts chunks into frames, in order. `push` throws FrameError on a frame no peer would send. */
export class FrameReader {
  #chunks: Buffer[] = []
  #buffered = 0

  push(chunk: Buffer, onFrame: (frame: Frame) => void): void {
    this.#chunks.push(chunk)
    this.#buffered += chunk.length
    for (;;) {
      if (this.#buffered < 5) return
      const head = this.#peek(5)
      const length = head.readUInt32LE(0)
      if (length < 1 || length > MAX_FRAME_BYTES) throw new FrameError(`a frame of ${length} bytes`)
      if (this.#buffered < 4 + length) return
      const whole = this.#take(4 + length)
      onFrame({ kind: whole.readUInt8(4), payload: whole.subarray(5) })
    }
  }

  /** The first `n` buffered bytes (n ≤ buffered), joined only if they span chunks. */
  #peek(n: number): Buffer {
    const first = this.#chunks[0]
    if (first.length >= n) return first
    const joined = Buffer.concat(this.#chunks)
    this.#chunks = [joined]
    return joined
  }

  #take(n: number): Buffer {
    const first = this.#peek(n)
    this.#buffered -= n
    if (first.length === n) this.#chunks.shift()
    else this.#chunks[0] = first.subarray(n)
    return first.subarray(0, n)
  }
}
