#!/usr/bin/env node
/**
 * The `fastsock` command line: `fastsock pipe` (NetPIPE-style benchmark of every transport),
 * `fastsock rate` (message rate with many peers: msgrate's patterns, Observatory's phases),
 * `fastsock probe` (which transports this host offers), `fastsock run -- <command>` (runs a
 * command with fastsock as its `net`), `fastsock mpirun -n N <command>` (a fastsock/mpi job on this
 * host) and `fastsock osu <benchmark>` (OSU-style benchmarks of fastsock/mpi beside Open MPI's C).
 * Exit status: 0 success, 1 failure,
 * 2 bad usage (commander's message on stderr).
 */
import { Command, CommanderError } from 'commander'
import { killAll } from './children'
import { mpirunCommand } from './mpirun'
import { osuCommand } from './osu/command'
import { pipeCommand } from './pipe/command'
import { probeCommand } from './probe'
import { rateCommand } from './rate/command'
import { runCommand } from './run'

function program (): Command {
  const version = (() => {
    try {
      // eslint-disable-next-line @typescript-eslint/no-var-requires
      return (require('../../package.json') as { version: string }).version
    } catch {
      return 'unknown'
    }
  })()
  const p = new Command('fastsock')
    .description('fastsock: the fastest channel between two endpoints, as a drop-in for Node net')
    .version(version)
    .showHelpAfterError('(run with --help for usage)')
    // Throw instead of exiting, so main() decides the status: 2 for usage errors. Set before the
    // subcommands are added: they inherit it.
    .exitOverride()
  p.addCommand(copyInherited(p, pipeCommand()))
  p.addCommand(copyInherited(p, rateCommand()))
  p.addCommand(copyInherited(p, probeCommand()))
  p.addCommand(copyInherited(p, osuCommand()))
  // `run -- cmd --opt`: options after the command are the command's, not fastsock's.
  p.enablePositionalOptions()
  p.addCommand(copyInherited(p, runCommand()))
  p.addCommand(copyInherited(p, mpirunCommand()))
  return p
}

function copyInherited (parent: Command, sub: Command): Command {
  return sub.copyInheritedSettings(parent)
}

/**
 * Runs the command line with `argv` (user arguments, without `node` and the script). Resolves
 * with the exit status; never calls process.exit itself.
 */
export async function main (argv: string[]): Promise<number> {
  process.exitCode = undefined
  try {
    await program().parseAsync(argv, { from: 'user' })
    return typeof process.exitCode === 'number' ? process.exitCode : 0
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end here with code 0; everything else is a usage error.
      return err.exitCode === 0 ? 0 : 2
    }
    // A missing optional package is the user's to fix: its message says how, no stack needed.
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
