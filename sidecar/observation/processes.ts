/**
 * Process facts: the observation context (the foreground process and the PTY's tty), the
 * terminal's process tree, the regular files its processes hold open, and declared environment
 * variables. Every process handle is checked against the tree read for this request by pid and
 * start time, so a process that exited — or a new one that got its pid — is refused.
 */
import { lstat } from 'node:fs/promises'
import { pseudoFilesystem } from '../files/pseudo-fs.ts'
import type * as v from 'valibot'
import { OBSERVE_MAX_ARGUMENTS, OBSERVE_MAX_OPEN_FILES, OBSERVE_MAX_PROCESSES } from '../../schema/limits.ts'
import type {
  Descendants,
  EnvironmentRequest,
  EnvironmentValues,
  Handle,
  ObservationFacts,
  OpenFiles,
  OpenFilesRequest,
  ProcessSnapshot,
} from '../../schema/wire/observation.ts'
import { OwnStateLook } from '../files/own-state.ts'
import { sameObject, type ObjectIdentity } from './handles.ts'
import { handleInvalid, type ObservedTerminal } from './observed.ts'
import { deviceIdOf, executableNameOf, ptsDeviceNumber, startedAtOf, type ProcStat } from './proc.ts'
import { procReader } from './proc-reader.ts'
import { knownRoots, mintPath, shownPath } from './roots.ts'

function processHandle(view: ObservedTerminal, process: ProcStat): Handle {
  return view.codec.mint(view.binding, { kind: 'p', pid: process.pid, startTicks: process.startTicks })
}

export async function context(view: ObservedTerminal): Promise<ObservationFacts> {
  const leader = (await view.tree()).foreground
  const [[{ argv }], home] = await Promise.all([procReader.details([leader.pid]), view.variable('HOME')])
  const startedAt = startedAtOf(leader.startTicks)
  const index = view.terminal.ttyIndex
  // Proven: the kernel named this PTY's slave for its master, and it is the process's controlling tty.
  const proven = index !== undefined && leader.ttyNr !== 0 && leader.ttyNr === ptsDeviceNumber(index)
  return {
    terminal: view.codec.mint(view.binding, { kind: 't', fact: '' }),
    project: view.codec.mint(view.binding, { kind: 'j', fact: view.terminal.cwd }),
    environment: view.codec.mint(view.binding, { kind: 'e', fact: home ?? '' }),
    process: processHandle(view, leader),
    foreground: {
      executableName: executableNameOf(argv, leader.comm),
      ...(argv && argv.length > 1 ? { arguments: argv.slice(1, OBSERVE_MAX_ARGUMENTS + 1) } : {}),
      ...(startedAt ? { startedAt } : {}),
    },
    ...(proven ? { tty: { deviceId: deviceIdOf(leader.ttyNr), deviceName: `pts/${index}` } } : {}),
  }
}

export async function descendants(view: ObservedTerminal): Promise<Descendants> {
  const tree = await view.tree()
  const shown = tree.processes.slice(0, OBSERVE_MAX_PROCESSES)
  const roots = await knownRoots(view)
  const details = await procReader.details(shown.map((p) => p.pid))
  const processes = shown.map((process, i): ProcessSnapshot => {
    const { argv, cwd } = details[i]
    const startedAt = startedAtOf(process.startTicks)
    const where = cwd === undefined ? undefined : shownPath(roots, cwd)
    return {
      handle: processHandle(view, process),
      executableName: executableNameOf(argv, process.comm),
      pid: process.pid,
      parentPid: process.ppid,
      state: process.state,
      foreground: tree.inForeground(process),
      ...(argv && argv.length > 1 ? { arguments: argv.slice(1, OBSERVE_MAX_ARGUMENTS + 1) } : {}),
      ...(startedAt ? { startedAt } : {}),
      ...(where !== undefined ? { cwd: where } : {}),
    }
  })
  return { processes, truncated: tree.processes.length > shown.length }
}

type Access = 'readable' | 'writable' | 'read-write'

export async function openFiles(view: ObservedTerminal, r: v.InferOutput<typeof OpenFilesRequest>): Promise<OpenFiles> {
  // Every handle is checked before anything is read: one bad handle refuses the whole request.
  const tree = await view.tree()
  const members = r.processes.map((ref) => {
    const id = 'handle' in ref ? (ref.handle as Handle).id : (ref as Handle).id
    const identity = view.codec.open(id, view.binding, ['p'])
    const process = identity && tree.member(identity)
    if (!process) throw handleInvalid('process handle')
    return process
  })
  const roots = await knownRoots(view)
  const own = await OwnStateLook.take()
  const byInode = new Map<string, { path: string; shown: string; access: Access; identity: ObjectIdentity; root: (typeof roots)[number] }>()
  const pids = [...new Set(members.map((p) => p.pid))]
  for (const descriptors of await procReader.descriptors(pids)) {
    for (const descriptor of descriptors) {
      const root = roots.find((candidate) => shownPath([candidate], descriptor.path) !== undefined)
      const shown = shownPath(roots, descriptor.path)
      if (!root || shown === undefined) continue
      // The name must still be this file (not renamed away, not replaced), or its handle would be
      // born invalid.
      const named = await lstat(descriptor.path, { bigint: true }).catch(() => undefined)
      const identity = descriptor.identity
      if (!named?.isFile() || !sameObject(named, identity)) continue
      // termkeep's own files (a program here with the database open) are not this terminal's to show.
      if (own && (await own.covers(descriptor.path, named))) continue
      // Nor a file that only presents kernel state (a process may hold its /proc files open).
      if ((await pseudoFilesystem(descriptor.path, named.dev).catch(() => 'unknown')) !== undefined) continue
      const key = `${identity.dev}:${identity.ino}`
      const seen = byInode.get(key)
      const access = seen && seen.access !== descriptor.access ? 'read-write' : descriptor.access
      byInode.set(key, { path: descriptor.path, shown, access, identity, root })
    }
  }
  const wanted = [...byInode.values()].filter((f) => f.access === 'read-write' || f.access === r.access)
  const files = wanted.slice(0, OBSERVE_MAX_OPEN_FILES).map((f) => ({
    handle: mintPath(view, 'f', { path: f.path, ...f.identity, root: f.root.path, base: f.root.base }),
    path: f.shown,
    access: f.access,
  }))
  return { files, truncated: wanted.length > files.length }
}

export async function environment(view: ObservedTerminal, r: v.InferOutput<typeof EnvironmentRequest>): Promise<EnvironmentValues> {
  view.requireDeclared(r.names)
  const values: Record<string, string> = {}
  for (const name of r.names) {
    const value = await view.variable(name)
    if (value !== undefined) values[name] = value
  }
  return { environment: values }
}
