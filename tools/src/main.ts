#!/usr/bin/env node
/**
 * The fastsock-tools command line: `pipe` (NetPIPE-style benchmark of every transport), `rate`
 * (message rate with many peers: msgrate's patterns, Observatory's phases), `osu` (OSU-style
 * benchmarks of fastsock/mpi beside Open MPI's C) and `npb` (the NAS Parallel Benchmarks' kernels
 * in TypeScript beside the NAS reference). Run as `fastsock-tools <command>`, or as
 * `fastsock <command>`: the library's own command line hands these over (it calls main()
 * with the program name 'fastsock' and FASTSOCK_TOOLS_LIBRARY naming its package).
 * Exit status: 0 success, 1 failure, 2 bad usage (commander's message on stderr).
 */
import { Command, CommanderError } from 'commander'
import { killAll } from './harness/children'
import { pinLibrary } from './harness/library'
import { npbCommand } from './npb/command'
import { osuCommand } from './osu/command'
import { pipeCommand } from './pipe/command'
import { rateCommand } from './rate/command'

/** The commands this package provides (the library's `fastsock` hands exactly these over). */
export const COMMANDS = ['pipe', 'rate', 'osu', 'npb'] as const

function toolsVersion (): string {
  try {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    return (require('../package.json') as { version: string }).version
  } catch {
    return 'unknown'
  }
}

function program (name: string): Command {
  const p = new Command(name)
    .description('fastsock-tools: benchmarks of fastsock (pipe, rate) and of fastsock/mpi (osu, npb)')
    .version(toolsVersion())
    .showHelpAfterError('(run with --help for usage)')
    // Throw instead of exiting, so main() decides the status: 2 for usage errors. Set before the
    // subcommands are added: they inherit it.
    .exitOverride()
  for (const sub of [pipeCommand(), rateCommand(), osuCommand(), npbCommand()]) p.addCommand(sub.copyInheritedSettings(p))
  return p
}

/**
 * Runs the command line with `argv` (user arguments, without `node` and the script), as program
 * `name` in help and errors. Resolves with the exit status; never calls process.exit itself.
 */
export async function main (argv: string[], name = 'fastsock-tools'): Promise<number> {
  process.exitCode = undefined
  // Every process a tool starts loads the library this one found.
  pinLibrary()
  try {
    await program(name).parseAsync(argv, { from: 'user' })
    return typeof process.exitCode === 'number' ? process.exitCode : 0
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; everything else is a usage error.
      return err.exitCode === 0 ? 0 : 2
    }
    // A missing package is the user's to fix: its message says how, no stack needed.
    const missing = (err as { code?: string })?.code === 'ERR_FASTSOCK_MISSING_DEPENDENCY'
    process.stderr.write(`fastsock: ${missing ? (err as Error).message : (err as Error)?.stack ?? String(err)}\n`)
    return 1
  } finally {
    killAll()
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      // Exit explicitly: a stray handle (a half-closed socket of a broken rung) must not keep a
      // finished benchmark alive. Output has been flushed by the commands.
      process.exit(code)
    },
    () => process.exit(1)
  )
}
