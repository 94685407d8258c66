/**
 * Pseudo filesystems — procfs, sysfs, devtmpfs, cgroupfs, debugfs and the like — present kernel
 * and process state, not stored files: `/proc/self/environ` read by the sidecar is the sidecar's
 * own environment (its secret and the admin token). Nothing on one is ever opened for a request,
 * however the path reached it (a HOME of `/proc/self`, a symlink, a bind mount).
 *
 * Decided by the filesystem, never by a path prefix: the statfs type of the object itself
 * (linux/magic.h), and for a type that real and pseudo filesystems share (devtmpfs is a tmpfs)
 * the mount table's filesystem name of the mount whose device the object is on. Elsewhere than
 * Linux nothing is known to be pseudo.
 */
import { readFile, statfs } from 'node:fs/promises'

/** statfs f_type of the filesystems that only present state (include/uapi/linux/magic.h). */
const PSEUDO_TYPES = new Map<number, string>([
  [0x9fa0, 'proc'],
  [0x62656572, 'sysfs'],
  [0x0027e0eb, 'cgroup'],
  [0x63677270, 'cgroup2'],
  [0x64626720, 'debugfs'],
  [0x74726163, 'tracefs'],
  [0x73636673, 'securityfs'],
  [0x6165676c, 'pstore'],
  [0xcafe4a11, 'bpf'],
  [0x62656570, 'configfs'],
  [0x00001cd1, 'devpts'],
  [0xde5e81e4, 'efivarfs'],
  [0xf97cff8c, 'selinuxfs'],
  [0x43415d53, 'smackfs'],
  [0x65735543, 'fusectl'],
  [0x42494e4d, 'binfmt_misc'],
  [0x19800202, 'mqueue'],
  [0x6e736673, 'nsfs'],
])

/** tmpfs and ramfs: real files, unless the mount is a devtmpfs (which reports tmpfs's type). */
const SHARED_TYPES = new Set([0x01021994, 0x858458f6])

/** Mount-table names of pseudo filesystems whose statfs type is a shared one. */
const PSEUDO_MOUNTS = new Set(['devtmpfs'])

/**
 * The name of the pseudo filesystem `path` is on (statfs follows it: `/proc/self/fd/N` names the
 * opened object), or undefined for a filesystem of stored files. `dev` is the object's st_dev.
 */
export async function pseudoFilesystem(path: string, dev: bigint): Promise<string | undefined> {
  if (process.platform !== 'linux') return undefined
  const type = Number((await statfs(path)).type)
  const known = PSEUDO_TYPES.get(type)
  if (known !== undefined) return known
  if (!SHARED_TYPES.has(type)) return undefined
  const mounted = mountTypeOf(await readFile('/proc/self/mountinfo', 'utf8'), dev)
  return mounted !== undefined && PSEUDO_MOUNTS.has(mounted) ? mounted : undefined
}

/** Pure: the filesystem type of the mount (a /proc/self/mountinfo text) on device `dev`. */
export function mountTypeOf(mountinfo: string, dev: bigint): string | undefined {
  const wanted = `${majorOf(dev)}:${minorOf(dev)}`
  for (const line of mountinfo.split('\n')) {
    const fields = line.split(' ')
    const separator = fields.indexOf('-')
    if (separator > 0 && fields[2] === wanted) return fields[separator + 1]
  }
  return undefined
}

/** glibc's dev_t layout (gnu_dev_major / gnu_dev_minor). */
const majorOf = (dev: bigint) => ((dev >> 8n) & 0xfffn) | ((dev >> 32n) & ~0xfffn)
const minorOf = (dev: bigint) => (dev & 0xffn) | ((dev >> 12n) & ~0xffn)
