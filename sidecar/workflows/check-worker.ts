/**
 * The worker thread that parses scripts for check.ts: the engine's files come first, then each
 * message is a script, answered with why it does not parse (or nothing), in order.
 */
import { parentPort } from 'node:worker_threads'
import { type EngineFiles, loadQuickJS, ScriptChecker } from './quickjs.ts'

const port = parentPort
if (!port) throw new Error('the script check worker started outside a worker thread')

let checker: Promise<ScriptChecker> | undefined
port.on('message', (message: { files: EngineFiles } | { script: string }) => {
  if ('files' in message) {
    const { files } = message
    checker = loadQuickJS(files).then((loaded) => new ScriptChecker(files, loaded))
    void checker.then(() => port.postMessage({ ready: true }))
    return
  }
  void checker!.then((ready) => ready.problem(message.script)).then((problem) => port.postMessage({ problem }))
})
