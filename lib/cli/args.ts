/**
 * Argument parsing for the library's own commands (run, mpirun, probe), on node:util's parseArgs:
 * the library has no command-line dependency. A bad argument is a UsageError, which main.ts
 * prints in one line and turns into exit status 2.
 */
import { parseArgs } from 'util'

/** One option: a flag (boolean) or an option taking a value (string), with its one-letter form. */
export interface OptionSpec { type: 'boolean' | 'string', short?: string }
export type OptionSpecs = Record<string, OptionSpec>

/**
 * A usage error: `message` says what is wrong, without the command's name (main.ts adds it).
 * It never leaves the command line (main.ts catches it by class), so it has no ERR_FASTSOCK_
 * code of its own: FASTSOCK_ERROR_CODES lists what the library throws to applications.
 */
export class UsageError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

/**
 * Parses `args` as options only (no operands). Values: booleans for flags, strings for options
 * with a value; absent options are absent. Throws UsageError (unknown option, missing value,
 * an operand).
 */
export function parseOptions (args: string[], options: OptionSpecs): Record<string, string | boolean | undefined> {
  try {
    return { ...parseArgs({ args, options, strict: true, allowPositionals: false }).values }
  } catch (err) {
    const e = err as { code?: string, message: string }
    if (e.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') throw new UsageError(`unknown option ${/'[^']*'/.exec(e.message)?.[0] ?? e.message}`)
    if (e.code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') throw new UsageError(`unexpected argument ${/'[^']*'/.exec(e.message)?.[0] ?? e.message}`)
    if (typeof e.code === 'string' && e.code.startsWith('ERR_PARSE_ARGS_')) throw new UsageError(e.message.charAt(0).toLowerCase() + e.message.slice(1))
    throw err
  }
}

/**
 * Splits `args` where a command starts: at its first operand, or after a `--` (dropped). What
 * comes before is this command's options (parse them with parseOptions); what follows, the
 * command's own words, options included, untouched (`fastsock run -- node app.js --port 1`).
 */
export function splitAtCommand (args: string[], options: OptionSpecs): { own: string[], command: string[] } {
  const takesValue = (name: string | undefined): boolean => name !== undefined && options[name]?.type === 'string'
  const byShort = new Map(Object.entries(options).filter(([, o]) => o.short !== undefined).map(([n, o]) => [o.short as string, n]))
  let i = 0
  while (i < args.length) {
    const a = args[i]
    if (a === '--') return { own: args.slice(0, i), command: args.slice(i + 1) }
    if (a.startsWith('--')) {
      // --name value, unless written --name=value.
      i += !a.includes('=') && takesValue(a.slice(2)) ? 2 : 1
    } else if (a.startsWith('-') && a.length > 1) {
      // -n 4, -n4, or a group of one-letter flags; the first letter taking a value takes the rest.
      let next = i + 1
      for (let k = 1; k < a.length; k++) {
        if (takesValue(byShort.get(a[k]))) {
          if (k === a.length - 1) next = i + 2
          break
        }
      }
      i = next
    } else {
      break
    }
  }
  return { own: args.slice(0, i), command: args.slice(i) }
}
