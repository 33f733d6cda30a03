/**
 * `fastsock pipe | rate | osu | npb`: the benchmarks live in the fastsock-tools package (tools/ in this
 * repository), with their own dependencies, so that the library installs none of them. This file
 * finds that package and hands the command over, in this process; without it, one line says what
 * to install.
 */
import * as path from 'path'

/** The commands fastsock-tools provides. */
export const TOOL_COMMANDS: readonly string[] = ['pipe', 'rate', 'osu', 'npb']

/** The package's name, as `npm install` takes it. */
export const TOOLS_PACKAGE = 'fastsock-tools'

/** This library's package directory (dist/cli/ is two levels down). */
const LIBRARY_ROOT = path.resolve(__dirname, '..', '..')

/**
 * fastsock-tools' entry module: resolved from the current directory (the application's
 * installation) first, then from this package (installed beside it, or this repository's
 * workspace); null when neither has it.
 */
export function findTools (): string | null {
  for (const from of [process.cwd(), __dirname]) {
    try {
      return require.resolve(TOOLS_PACKAGE, { paths: [from] })
    } catch { /* next */ }
  }
  return null
}

/** The one line `fastsock <command>` prints when fastsock-tools is not installed. */
export function notInstalled (command: string): string {
  return `fastsock ${command} is in the ${TOOLS_PACKAGE} package, not installed here: npm install --save-dev ${TOOLS_PACKAGE}`
}

/**
 * Runs `fastsock <command> <args>` with fastsock-tools: resolves with its exit status (0, 1
 * failure, 2 usage), or 1 after notInstalled()'s line on stderr when the package is absent.
 */
export async function runTool (command: string, args: string[]): Promise<number> {
  const entry = findTools()
  if (entry === null) {
    process.stderr.write(notInstalled(command) + '\n')
    return 1
  }
  // The tools measure this library (the fastsock that was run), and so do the processes they start.
  if (process.env.FASTSOCK_TOOLS_LIBRARY === undefined || process.env.FASTSOCK_TOOLS_LIBRARY === '') process.env.FASTSOCK_TOOLS_LIBRARY = LIBRARY_ROOT
  // eslint-disable-next-line @typescript-eslint/no-var-requires
  const tools = require(entry) as { main: (argv: string[], name?: string) => Promise<number> }
  return await tools.main([command, ...args], 'fastsock')
}
