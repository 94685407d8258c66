import { spawn } from 'node:child_process'

/** Another process (not this one, not the sidecar) takes the database's write lock and holds it
 * until released, as a `sqlite3` shell left in a transaction would. */
export function holdWriteLock(databaseUrl: string): { locked: Promise<void>; release(): Promise<void> } {
  const child = spawn(
    process.execPath,
    [
      '--input-type=module',
      '-e',
      `import { createClient } from '@libsql/client'
const tx = await createClient({ url: process.env.LOCK_URL }).transaction('write')
await tx.execute("INSERT INTO health_probes (writer, checked_at) VALUES ('lock', 1) ON CONFLICT DO NOTHING")
process.stdout.write('locked\\n')
process.stdin.resume()
process.stdin.once('end', async () => { await tx.rollback(); process.exit(0) })`,
    ],
    { cwd: process.cwd(), env: { ...process.env, LOCK_URL: databaseUrl }, stdio: ['pipe', 'pipe', 'inherit'] },
  )
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()))
  const locked = new Promise<void>((resolve, reject) => {
    child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('locked') && resolve())
    child.once('exit', (code) => reject(new Error(`the lock holder exited (${code}) before it held the lock`)))
  })
  return {
    locked,
    release: async () => {
      child.stdin!.end()
      const timer = setTimeout(() => child.kill('SIGKILL'), 5_000)
      await exited
      clearTimeout(timer)
    },
  }
}
