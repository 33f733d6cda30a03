/**
 * `fastsock run [--] <command> [args...]`: the launcher (JFS's "no source code modification").
 * Runs the command with the preload hook (lib/register.ts) in NODE_OPTIONS, by absolute path, so
 * that it and every Node process it starts (fork, spawn of node, cluster workers, worker
 * threads, which inherit NODE_OPTIONS) use fastsock's `net`. stdio is inherited; SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH are forwarded to the child. The exit
 * status is the child's, or 128 + the signal number when a signal ended it; 127 when the command
 * cannot be started.
 */
import { spawn } from 'child_process'
import * as os from 'os'
import * as path from 'path'
import { parseOptions, splitAtCommand, UsageError } from './args'

/** Absolute path of the CommonJS hook (dist/register.js), next to this build. */
export const REGISTER_PATH = path.resolve(__dirname, '..', 'register.js')

/** `s` quoted for NODE_OPTIONS (double quotes, with `\` and `"` escaped). */
function quote (s: string): string {
  return `"${s.replace(/[\\"]/g, c => '\\' + c)}"`
}

/**
 * NODE_OPTIONS with `--require <REGISTER_PATH>` appended to `existing` (kept as is), unless it is
 * already there.
 */
export function nodeOptionsWithHook (existing: string | undefined, registerPath = REGISTER_PATH): string {
  const req = `--require ${quote(registerPath)}`
  const prev = (existing ?? '').trim()
  if (prev.includes(registerPath)) return prev
  return prev ? `${prev} ${req}` : req
}

const FORWARDED: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT', 'SIGUSR1', 'SIGUSR2', 'SIGWINCH']

/**
 * Spawns `argv[0]` with `argv.slice(1)` (no shell), the hook in NODE_OPTIONS, inherited stdio;
 * resolves with the exit status described in the module comment. Never rejects.
 */
export function runWithHook (argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  return new Promise(resolve => {
    const childEnv = { ...env, NODE_OPTIONS: nodeOptionsWithHook(env.NODE_OPTIONS) }
    const child = spawn(argv[0], argv.slice(1), { stdio: 'inherit', env: childEnv })
    const handlers = new Map<NodeJS.Signals, () => void>()
    for (const sig of FORWARDED) {
      const h = (): void => { if (child.exitCode === null && child.signalCode === null) child.kill(sig) }
      handlers.set(sig, h)
      process.on(sig, h)
    }
    const done = (code: number): void => {
      for (const [sig, h] of handlers) process.removeListener(sig, h)
      resolve(code)
    }
    child.once('error', err => {
      process.stderr.write(`fastsock run: cannot run ${argv[0]}: ${(err as NodeJS.ErrnoException).code ?? err.message}\n`)
      done(127)
    })
    child.once('exit', (code, signal) => {
      if (signal) done(128 + (os.constants.signals[signal] ?? 0))
      else done(code ?? 1)
    })
  })
}

export const RUN_USAGE = `Usage: fastsock run [--] <command> [args...]

Runs the command with fastsock as its net: the preload hook in NODE_OPTIONS, so the Node
processes it starts inherit it. stdio inherited, signals forwarded; exit status the command's
(128 + n after signal n, 127 when it cannot start).

Examples:
  npx fastsock run -- node server.js
  FASTSOCK_DEBUG=1 npx fastsock run -- npm start
`

/** `fastsock run` with its arguments: the command's exit status; UsageError without a command. */
export async function runMain (args: string[]): Promise<number> {
  const { own, command } = splitAtCommand(args, { help: { type: 'boolean', short: 'h' } })
  if (parseOptions(own, { help: { type: 'boolean', short: 'h' } }).help === true) {
    process.stdout.write(RUN_USAGE)
    return 0
  }
  if (command.length === 0) throw new UsageError('missing the command to run (fastsock run -- node app.js)')
  return await runWithHook(command)
}
