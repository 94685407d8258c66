// Preload (node --import) for a sidecar whose start must be slow between its generation's claim
// and its first answer: every connection to a keeper's Unix socket is made SLOW_MS late, so the
// sidecar waits for its terminals' keeper after it registered its host. The hosts tests check that
// a host is not listed `up` in that window.
import net from 'node:net'
import { syncBuiltinESMExports } from 'node:module'

const SLOW_MS = 2_000
const connect = net.connect
net.connect = net.createConnection = function slowConnect(...args) {
  const target = args[0]
  if (typeof target !== 'string' || !target.endsWith('/socket')) return connect.apply(this, args)
  const socket = new net.Socket()
  setTimeout(() => socket.connect(target), SLOW_MS)
  return socket
}
syncBuiltinESMExports()
