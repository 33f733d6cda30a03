/**
 * `fastsock pipe`: the command definition (commander) and its action: run, then write the report,
 * `--json`, `--csv` and the plot. Exit status: 0 when every cell was measured, 1 when some failed
 * (the outputs are still written) or the optional packages it cannot run without are missing
 * (simple-statistics, cli-table3: MissingDependencyError before measuring), 2 for bad flags.
 * Without vega it runs and writes no plot, saying what to install.
 */
import { Command, Option } from 'commander'
import { byteCount, nonNegativeInt, positiveInt } from '../harness/args'
import { hasOptional, MissingDependencyError, requireOptional } from '../harness/optional'
import { writeOut, writePlot } from '../harness/output'
import { Progress } from '../harness/progress'
import { byteCounts, parseModes, resolveOptions, type RawPipeOptions } from './options'
import { defaultPlotPath, PLOT_NEEDS, renderSvg } from './plot'
import { renderCsv, renderJson, renderReport } from './report'
import { runPipe } from './runner'

const HELP_AFTER = `
What it measures (NetPIPE-style, between this process and a peer it forks):
  pingpong  half round-trip latency RTT/2 (µs: median, sextile = 1/6 quantile, p99) and bandwidth
            n/(RTT/2) (MB/s, MB = 10^6 bytes, and Gbit/s) for sizes 1 B .. --max-size, powers of
            two; CPU time (user+sys) of both processes per message; fit T(n) = ts + tb·n.
            Sizes start at 1 B: on a byte stream a 0-byte write sends nothing, so NetPIPE's
            0-byte point has no equivalent here.
  stream    one-way bandwidth: the sender keeps the pipe full (honouring 'drain'), the
            receiver counts bytes and acks; powers of four up to --max-size.
  typed     Uint8Array/Int32Array/Float64Array end to end into the peer's own typed array:
            fastsock write(view)+readInto(view) vs JSON, v8.serialize and hand-framed raw
            bytes over Node net TCP.
Channels: every fastsock rung available here (fastsock probe), each forced alone, plus the
baselines net:tcp (TCP loopback) and net:unix (UNIX path socket). fastsock:shm is what a user gets
with no option set (adaptive busy polling on); with shm also "fastsock:shm (no polling)"
(shmPollUs 0: always sleep on the doorbell). Each row names the transport that actually ran.
--transports takes rung names (shm, shm-nopoll, unix, tcp, ...), net-tcp, net-unix.
Native limits in the same run: memcpy per size, busy-poll shared-memory floor, cross-core
placement, and NetPIPE's NPtcp when installed (Debian: netpipe-tcp).

Examples:
  fastsock pipe                      # everything, about a minute on 2 cores
  fastsock pipe --quick --json -     # a few seconds; JSON on stdout, tables on stderr
  fastsock pipe --mode pingpong --transports unix,net-tcp --perturbations --plot lat.svg`

export function pipeCommand (): Command {
  return new Command('pipe')
    .description('NetPIPE-style latency and bandwidth sweep over every fastsock transport and Node net baselines')
    .addOption(new Option('--mode <mode>', 'pingpong | stream | typed | all, or a comma-separated list').default(['pingpong', 'stream', 'typed'], 'all').argParser(parseModes))
    .option('--transports <list>', 'channels to measure, comma-separated (rungs such as unix,tcp; net-tcp, net-unix)')
    .addOption(new Option('--max-size <bytes>', 'largest message, e.g. 65536, 64KiB, 4MiB').default(4 * 1024 * 1024, '4MiB').argParser(byteCount))
    .option('--perturbations', 'also measure n-3 and n+3 around each size (NetPIPE), 3× the time')
    .option('--quick', 'few sizes and iterations: a few seconds (CI, tests)')
    .option('--budget-ms <ms>', 'time budget per ping-pong size and channel (default 150, --quick 20)', positiveInt)
    .option('--rounds <n>', 'slices the budget is spent in, interleaved across channels (default 5, --quick 2)', positiveInt)
    .addOption(new Option('--pin <placement>', 'CPU placement of the two processes: split (one CPU each), same (one CPU), none (scheduler), auto = split when 2 CPUs and taskset').choices(['auto', 'split', 'same', 'none']).default('auto'))
    .option('--min-iters <n>', 'round trips per size at least (default 20, --quick 5)', positiveInt)
    .option('--max-iters <n>', 'round trips per size at most (default 50000)', positiveInt)
    .option('--warmup <n>', 'warm-up round trips per connection, capped at 400 ms (default 10000)', positiveInt)
    .option('--stream-ms <ms>', 'time budget per stream size (default 100)', positiveInt)
    .option('--typed-sizes <list>', 'typed-array payload sizes (default 1KiB,64KiB,1MiB)', byteCounts)
    .option('--shm-poll-us <us>', 'shmPollUs of the fastsock:shm row, the cap of its polling window (default: none set, the library default)', nonNegativeInt)
    .option('--timeout <s>', 'give up on a cell that makes no progress for this long (default 5)', positiveInt)
    .option('--json <file>', "write every result as JSON to <file> ('-': stdout)")
    .option('--csv <file>', "write every result as CSV to <file> ('-': stdout)")
    .option('--plot <file>', 'write the latency/bandwidth plot (SVG) to <file>', 'fastsock-pipe.svg')
    .option('--no-plot', 'do not write the plot')
    .option('--nptcp', "run NetPIPE's NPtcp beside (default: when on PATH, not with --quick)")
    .option('--no-nptcp', 'do not run NPtcp')
    .option('--no-progress', 'no progress bar (it is only drawn when stderr is a terminal)')
    .addHelpText('after', HELP_AFTER)
    .action(async (raw: RawPipeOptions, cmd: Command) => {
      if (raw.json === '-' && raw.csv === '-') cmd.error("error: --json - and --csv - cannot both write to stdout", { exitCode: 2 })
      const opts = resolveOptions(raw)
      const plotByDefault = opts.plot === 'fastsock-pipe.svg'
      if (opts.plot !== null && plotByDefault) opts.plot = defaultPlotPath()
      process.exitCode = await pipeAction(opts, plotByDefault)
    })
}

/** The packages fastsock pipe cannot measure or report without. */
const PIPE_NEEDS = ['simple-statistics', 'cli-table3']

async function pipeAction (opts: ReturnType<typeof resolveOptions>, plotByDefault: boolean): Promise<number> {
  requireOptional(PIPE_NEEDS, 'fastsock pipe')
  const progress = new Progress(opts.progress)
  // Without vega: no plot, said now and in the report; an error only when --plot asked for one.
  const noPlot = opts.plot !== null && !hasOptional('vega') ? new MissingDependencyError('vega', PLOT_NEEDS) : null
  if (noPlot !== null) {
    progress.warn(`no plot: ${noPlot.message}`)
    opts.plot = null
  }
  const result = await runPipe(opts, progress)
  if (noPlot !== null) (plotByDefault ? result.warnings : result.errors).push(`plot: not written: ${noPlot.message}`)
  // Tables go to stdout unless stdout carries the machine-readable output.
  const human = opts.json === '-' || opts.csv === '-' ? process.stderr : process.stdout
  const notes: string[] = []
  if (opts.plot !== null) await writePlot(opts.plot, () => renderSvg(result), notes, result.errors)
  if (opts.json !== null && opts.json !== '-') notes.push(`json: ${opts.json}`)
  if (opts.csv !== null && opts.csv !== '-') notes.push(`csv: ${opts.csv}`)
  const report = renderReport(result) + (notes.length > 0 ? `wrote ${notes.join(', ')}\n` : '')
  await new Promise<void>((resolve) => human.write(report, () => resolve()))
  if (opts.json !== null) await writeOut(opts.json, renderJson(result))
  if (opts.csv !== null) await writeOut(opts.csv, renderCsv(result))
  const measured = result.pingpong.length + result.stream.length + result.typed.length
  return result.errors.length > 0 || measured === 0 ? 1 : 0
}
