/**
 * `fastsock rate`: the command definition (commander) and its action: resolve the configuration
 * (preset < --config file < flags), run, then write the report, `--json`, `--csv` and the plot.
 * Exit status: 0 when every cell was measured, 1 when some failed (the outputs are still
 * written), 2 for bad flags or a bad configuration file.
 */
import { Command, Option } from 'commander'
import { MissingDependencyError } from '../harness/optional'
import { writeOut, writePlot } from '../harness/output'
import { byteCount, nonNegativeInt, positiveInt } from '../harness/args'
import { Progress } from '../harness/progress'
import { parseCache, parseDirections, parsePatterns, parsePeers, parseSizes, readConfigFile, resolveConfig } from './config'
import { defaultPlotPath, renderSvg } from './plot'
import { renderCsv, renderJson, renderReport } from './report'
import { runRate } from './runner'
import { CONFIG_SCHEMA, RateConfigError } from './schema'
import type { RateConfig, RateOutput } from './types'

const HELP_AFTER = `
What it measures (Sandia's msgrate, Observatory's phases), between this process and N peer
processes it forks, over every fastsock rung available here (each forced alone) and Node net over
TCP and a UNIX path, interleaved in one run:
  single-direction  fan-out: this process sends a window to every peer, each acks the window;
                    fan-in: the reverse (every peer sends a window to this process)
  pair-based        with one peer at a time, both send a window and receive the other's
  all-start         windows to and from every peer at once, one wait for all
  bidirectional     long runs of windows both ways at once (Observatory's bidirectional throughput)
A message of n bytes is one n-byte write; a window is written back to back (cork/uncork: one
writev). msg/s counts every send and every receive (msgrate); delivered/s is half of it.
Cold cache: before each iteration every process touches a buffer larger than the last-level
cache, then writes its send buffers (not timed). Round-trip percentiles p50/p90/p99/p99.9 come
from a ping-pong per channel and size.

Examples:
  fastsock rate                            # everything, a few minutes on 2 cores
  fastsock rate --quick --json -           # seconds; JSON on stdout, tables on stderr
  fastsock rate --pattern single --sizes 64 --peers 1 --cache warm --transports shm,net-tcp
  fastsock rate --config run.json          # a configuration file, or the --json of a run
  fastsock rate --schema                   # the configuration's JSON Schema`

/** Flags that set RateConfig fields: commander's attribute name → the field. */
const CONFIG_FLAGS: Record<string, keyof RateConfig> = {
  pattern: 'patterns',
  direction: 'directions',
  sizes: 'sizes',
  peers: 'peers',
  window: 'window',
  cache: 'coldCache',
  iterations: 'iterations',
  minIterations: 'minIterations',
  budgetMs: 'budgetMs',
  coldIterations: 'coldIterations',
  warmup: 'warmupIterations',
  jitWarmupMs: 'jitWarmupMs',
  rounds: 'rounds',
  bidirectionalMessages: 'bidirectionalMessages',
  cacheBytes: 'cacheBytes',
  rttIterations: 'rttIterations',
  shmPollUs: 'shmPollUs',
  transports: 'transports',
  pin: 'pin',
  timeout: 'timeoutMs',
  quick: 'quick'
}

/** The RateConfig fields the user typed as flags. */
function fromFlags (cmd: Command): Partial<RateConfig> {
  const raw = cmd.opts()
  const out: Record<string, unknown> = {}
  for (const [flag, field] of Object.entries(CONFIG_FLAGS)) {
    if (cmd.getOptionValueSource(flag) !== 'cli') continue
    let v = raw[flag]
    if (flag === 'transports') v = String(v).split(',').map((s) => s.trim()).filter((s) => s !== '')
    if (flag === 'timeout') v = (v as number) * 1000
    out[field] = v
  }
  return out as Partial<RateConfig>
}

export function rateCommand (): Command {
  return new Command('rate')
    .description('sustained message rate with many peers (Sandia msgrate patterns, Observatory phases) over every fastsock transport and Node net')
    .option('--pattern <list>', 'single-direction, pair-based, all-start, bidirectional, or all (default)', parsePatterns)
    .option('--direction <list>', 'single-direction: fan-out, fan-in or both (default)', parseDirections)
    .option('--sizes <list>', 'message sizes, 1 B .. 64 KiB (default 8,64,512,4KiB,64KiB; --quick 8,64)', parseSizes)
    .option('--peers <list>', 'numbers of peer processes (default 1,2,4,... up to the CPUs, at least 4; --quick 1,2)', parsePeers)
    .option('--window <n>', 'messages in flight per peer and direction (default 64)', positiveInt)
    .option('--cache <state>', 'warm, cold or both (default)', parseCache)
    .option('--iterations <n>', 'timed iterations per warm cell and channel, at most (default 2000)', positiveInt)
    .option('--min-iterations <n>', 'timed iterations per warm cell and channel, at least (default 10)', positiveInt)
    .option('--budget-ms <ms>', 'time per warm cell and channel (default 60, --quick 5)', positiveInt)
    .option('--cold-iterations <n>', 'timed iterations per cold cell and channel (default 10)', positiveInt)
    .option('--warmup <n>', 'untimed iterations per cell and channel (default 20)', nonNegativeInt)
    .option('--jit-warmup-ms <ms>', 'once per run, before anything is timed: ms of untimed iterations per channel over every size, so that V8 has optimized every data path (default 1000, --quick 0)', nonNegativeInt)
    .option('--rounds <n>', 'slices the timed iterations run in, interleaved across channels (default 3)', positiveInt)
    .option('--bidirectional-messages <n>', 'bidirectional: messages per peer and direction per timed run (default 8192)', positiveInt)
    .option('--cache-bytes <bytes>', 'bytes touched between cold iterations (default 2 × last-level cache, at most 32 MiB)', byteCount)
    .option('--rtt-iterations <n>', 'round trips per channel and size for the RTT percentiles; 0: none (default 2000)', nonNegativeInt)
    .option('--transports <list>', 'channels, comma-separated (shm, shm-nopoll, unix, tcp, ...; net-tcp, net-unix)')
    .option('--shm-poll-us <us>', 'shmPollUs of the fastsock:shm channel, the cap of its polling window (default: none set, the library default)', nonNegativeInt)
    .addOption(new Option('--pin <placement>', 'split: this process and the peers on separate CPUs (auto when taskset and 2+ CPUs); none').choices(['auto', 'split', 'none']))
    .option('--timeout <s>', 'give up on a slice that makes no progress for this long (default 5)', positiveInt)
    .option('--quick', 'few cells and iterations: seconds (CI, npm test)')
    .option('--config <file>', 'run configuration (JSON; see --schema), or the --json output of a run to reproduce it')
    .option('--schema', 'print the configuration\'s JSON Schema and exit')
    .option('--json <file>', "write the result as JSON to <file> ('-': stdout)")
    .option('--csv <file>', "write the rows as CSV to <file> ('-': stdout)")
    .option('--plot <file>', 'write the message-rate plot (SVG) to <file>', 'fastsock-rate.svg')
    .option('--no-plot', 'do not write the plot')
    .option('--no-progress', 'no progress bar (it is only drawn when stderr is a terminal)')
    .addHelpText('after', HELP_AFTER)
    .action(async (raw: { schema?: boolean, config?: string, json?: string, csv?: string, plot: string | false, progress: boolean }, cmd: Command) => {
      if (raw.schema === true) {
        process.stdout.write(JSON.stringify(CONFIG_SCHEMA, null, 2) + '\n')
        return
      }
      if (raw.json === '-' && raw.csv === '-') cmd.error('error: --json - and --csv - cannot both write to stdout', { exitCode: 2 })
      let config: RateConfig
      try {
        config = resolveConfig(raw.config === undefined ? null : readConfigFile(raw.config), fromFlags(cmd))
      } catch (err) {
        if (err instanceof RateConfigError || err instanceof MissingDependencyError) cmd.error(`error: ${err.message}`, { exitCode: 2, code: err.code })
        throw err
      }
      const output: RateOutput = {
        json: raw.json ?? null,
        csv: raw.csv ?? null,
        plot: raw.plot === false ? null : raw.plot === 'fastsock-rate.svg' ? defaultPlotPath() : raw.plot,
        progress: raw.progress
      }
      process.exitCode = await rateAction(config, output)
    })
}

async function rateAction (config: RateConfig, out: RateOutput): Promise<number> {
  const result = await runRate(config, new Progress(out.progress, 'fastsock rate'))
  const human = out.json === '-' || out.csv === '-' ? process.stderr : process.stdout
  const notes: string[] = []
  if (out.plot !== null && result.rows.length > 0) await writePlot(out.plot, () => renderSvg(result), notes, result.errors)
  if (out.json !== null && out.json !== '-') notes.push(`json: ${out.json}`)
  if (out.csv !== null && out.csv !== '-') notes.push(`csv: ${out.csv}`)
  const report = renderReport(result) + (notes.length > 0 ? `wrote ${notes.join(', ')}\n` : '')
  await new Promise<void>((resolve) => human.write(report, () => resolve()))
  if (out.json !== null) await writeOut(out.json, renderJson(result))
  if (out.csv !== null) await writeOut(out.csv, renderCsv(result))
  return result.errors.length > 0 || result.rows.length === 0 ? 1 : 0
}
