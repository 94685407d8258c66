/**
 * Observation's /proc thread: the synchronous reads of proc.ts run here, one request at a time,
 * so neither their cost nor a read that waits on a process's memory lock holds up the sidecar's
 * event loop (journaling, SSE, every terminal). Requests and answers: proc-reader.ts.
 */
import { parentPort } from 'node:worker_threads'
import { foregroundLeader } from './foreground.ts'
import { argvOf, cwdOf, environOf, openRegularFiles, processTable, terminalTree } from './proc.ts'
import type { ProcRequest } from './proc-reader.ts'

const port = parentPort
if (!port) throw new Error('the /proc thread started outside a worker thread')

function answer(request: ProcRequest): unknown {
  switch (request.op) {
    case 'tree': {
      const tree = terminalTree(processTable(), request.shellPid)
      return { tree, foreground: tree.length > 0 ? foregroundLeader(request.shellPid, () => tree) : undefined }
    }
    case 'details':
      return request.pids.map((pid) => ({ argv: argvOf(pid), cwd: cwdOf(pid) }))
    case 'environ':
      return environOf(request.pid)
    case 'descriptors':
      return request.pids.map((pid) => openRegularFiles(pid))
  }
}

port.on('message', (message: { id: number; request: ProcRequest }) => {
  try {
    port.postMessage({ id: message.id, result: answer(message.request) })
  } catch (error) {
    port.postMessage({ id: message.id, error: String((error as Error)?.stack ?? error) })
  }
})
