/** The smoke suite on Node: the Node entry (api/runtime/node.ts) against sqld and the sidecar. */
import { describeSmoke } from './routes.ts'
import { startNodeTarget } from './targets.ts'

describeSmoke('Node API on a remote libSQL server', 'node', startNodeTarget)
