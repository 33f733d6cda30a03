#!/usr/bin/env node
/**
 * The `fastsock` command line. The library's own commands, without any command-line dependency
 * (node:util's parseArgs): `fastsock run -- <command>` (runs a command with fastsock as its
 * `net`), `fastsock mpirun -n N <command>` (a fastsock/mpi job on this host) and `fastsock probe`
 * (which transports this host offers). The benchmarks `fastsock pipe | rate | osu | npb` are handed
 * over to the fastsock-tools package when it is installed (./tools.ts), else one line says what
 * to install.
 * Exit status: 0 success, 1 failure (fastsock-tools not installed included), 2 bad usage (one
 * line on stderr).
 */
import { UsageError } from './args'
import { mpirunMain } from './mpirun'
import { probeMain } from './probe'
import { runMain } from './run'
import { findTools, runTool, TOOL_COMMANDS, TOOLS_PACKAGE } from './tools'

function version (): string {
  try {
    // eslint-disable-next-line @typescript-eslint/no-var-requires
    return (require('../../package.json') as { version: string }).version
  } catch {
    return 'unknown'
  }
}

/** The library's own commands: their arguments in, their exit status out. */
const COMMANDS: Record<string, (args: string[]) => Promise<number>> = { run: runMain, mpirun: mpirunMain, probe: probeMain }

function usage (): string {
  const tools = findTools() !== null ? 'installed' : `not installed: npm install --save-dev ${TOOLS_PACKAGE}`
  return `Usage: fastsock <command> [options]

fastsock: the fastest channel between two endpoints, as a drop-in for Node net

Commands:
  run [--] <command...>       run a command with fastsock as its net (the preload hook in NODE_OPTIONS)
  mpirun -n <N> <command...>  run N ranks of a fastsock/mpi program on this host
  probe [--json]              list every transport, whether it is available here and why

Benchmarks, from the ${TOOLS_PACKAGE} package (${tools}):
  pipe                        NetPIPE-style latency and bandwidth over every transport and Node net
  rate                        message rate with many peer processes
  osu <benchmark>             OSU Micro-Benchmarks of fastsock/mpi beside Open MPI's C
  npb <kernel>                NAS Parallel Benchmarks (CG, EP, FT, IS, MG) beside the NAS reference

Options:
  -h, --help                  this help (fastsock <command> --help: the command's)
  -V, --version               the version
`
}

/**
 * Runs the command line with `argv` (user arguments, without `node` and the script). Resolves
 * with the exit status; never calls process.exit itself.
 */
export async function main (argv: string[]): Promise<number> {
  process.exitCode = undefined
  const [command, ...args] = argv
  try {
    if (command === undefined) {
      process.stderr.write(usage())
      return 2
    }
    if (command === '-h' || command === '--help' || command === 'help') {
      process.stdout.write(usage())
      return 0
    }
    if (command === '-V' || command === '--version') {
      process.stdout.write(version() + '\n')
      return 0
    }
    if (TOOL_COMMANDS.includes(command)) return await runTool(command, args)
    const run = COMMANDS[command]
    if (run === undefined) throw new UsageError(`unknown command '${command}' (fastsock --help lists them)`)
    return await run(args)
  } catch (err) {
    if (err instanceof UsageError) {
      const where = command !== undefined && COMMANDS[command] !== undefined ? `fastsock ${command}` : 'fastsock'
      process.stderr.write(`${where}: error: ${err.message}\n(run with --help for usage)\n`)
      return 2
    }
    process.stderr.write(`fastsock: ${(err as Error)?.stack ?? String(err)}\n`)
    return 1
  }
}

if (require.main === module) {
  main(process.argv.slice(2)).then(
    (code) => {
      // Exit explicitly: a stray handle (a half-closed socket of a broken rung) must not keep a
      // finished command alive. Output has been flushed by the commands.
      process.exit(code)
    },
    () => process.exit(1)
  )
}
