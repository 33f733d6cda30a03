/**
 * Child processes started by the command line (the `pipe` peer, NPtcp). Every child is tracked
 * here and killed when this process exits, is interrupted (SIGINT, SIGTERM, SIGHUP) or fails,
 * so a benchmark never leaves a spinning peer behind. And `which`: where an executable the
 * tools start is (taskset, NPtcp, mpicc, mpirun).
 */
import type { ChildProcess } from 'child_process'
import * as fs from 'fs'
import * as path from 'path'

/** The full path of the executable file `name` on PATH (`env.PATH`), or null. */
export function which (name: string, env: NodeJS.ProcessEnv = process.env): string | null {
  for (const dir of (env.PATH ?? '').split(path.delimiter)) {
    if (dir === '') continue
    const p = path.join(dir, name)
    try {
      fs.accessSync(p, fs.constants.X_OK)
      if (fs.statSync(p).isFile()) return p
    } catch { /* not here */ }
  }
  return null
}

const live = new Set<ChildProcess>()
const onInterrupt: Array<() => void> = []
let installed = false

/** Kills every tracked child that is still running (SIGKILL: no clean-up is owed). */
export function killAll (): void {
  for (const child of live) {
    if (child.exitCode === null && child.signalCode === null) {
      try { child.kill('SIGKILL') } catch { /* already gone */ }
    }
  }
  live.clear()
}

/** Tracks `child` until it exits; installs the exit and signal handlers on first use. */
export function track (child: ChildProcess): ChildProcess {
  install()
  live.add(child)
  child.once('exit', () => live.delete(child))
  return child
}

/** Runs `fn` (for example: stop the progress bar) before exiting on a signal. */
export function atInterrupt (fn: () => void): void {
  install()
  onInterrupt.push(fn)
}

const SIGNAL_EXIT: Record<string, number> = { SIGINT: 130, SIGTERM: 143, SIGHUP: 129 }

function install (): void {
  if (installed) return
  installed = true
  process.on('exit', killAll)
  for (const sig of Object.keys(SIGNAL_EXIT) as NodeJS.Signals[]) {
    process.once(sig, () => {
      for (const fn of onInterrupt) {
        try { fn() } catch { /* keep going: the children must die */ }
      }
      killAll()
      process.stderr.write(`\nfastsock: interrupted (${sig}); peer processes killed\n`)
      process.exit(SIGNAL_EXIT[sig])
    })
  }
}
