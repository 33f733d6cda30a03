/**
 * `fastsock osu <benchmark>`: the OSU Micro-Benchmarks of fastsock/mpi (issues 17 and 18), run
 * beside the same API over Node net and Open MPI's C in one go. The command definition (commander)
 * and its action: run, then the report (stdout, or stderr when `--json -`), `--json` and `--plot`.
 * Exit status: 0 when every job asked for ran (Open MPI skipped for lack of mpicc is not a
 * failure: the reason is printed), 1 when a job failed (the outputs are still written) or an
 * optional package it needs is missing, 2 for bad usage.
 */
import { Command, InvalidArgumentError, Option } from 'commander'
import { loadMpi } from '../harness/library'
import { requireOptional } from '../harness/optional'
import { writeOut, writePlot } from '../harness/output'
import { table } from '../harness/table'
import { nonNegativeInt, parseBenchmark, parseImpls, parseMessageRange, parseNp, positiveInt, resolveOptions, type RawOsuOptions } from './options'
import { renderSvg } from './plot'
import { renderJson, renderReport } from './report'
import { runOsu } from './runner'
import { BENCHMARKS, type Benchmark } from './types'

const HELP_AFTER = `
Benchmarks (OSU Micro-Benchmarks 5.x's method and columns):
  latency   blocking ping-pong between 2 ranks; RTT/2 averaged (µs). 100 warm-up + 10,000
            iterations up to 8 KiB, 10 + 1,000 above.
  bw, bibw  windows of 64 non-blocking sends then a 4-byte ack (bibw: both ways); MB/s.
  mbw_mr    P/2 pairs at once; MB/s and messages/s.
  allreduce bcast reduce allgather alltoall gather scatter barrier
            collectives: '# Size  Avg Latency(us)' (-f: min, max, iterations), 1,000 iterations
            (200 warm-up) up to 8 KiB, 100 (10) above, sizes up to 1 MiB; reductions sum floats.
Side by side in the same run: fastsock/mpi on its default chain, the same API over TCP
(init({ transports: ['tcp'] }): what a Node user has with net), and Open MPI's C (a program of
fastsock's own compiled with mpicc into a private cache under the temp directory, run with
mpirun -np P; skipped with the reason when mpicc/mpirun are absent). Ratios per size:
fastsock ÷ Open MPI, and how many times faster fastsock is than Node net.
JMB's view: the sextile over up to 150 measurements per size, and T(n) = ts + tb·n
(collectives: T(n,p) = ts(p) + tb(p)·n per P, per forced algorithm) fitted to the sextiles.

Examples:
  fastsock osu latency --quick
  fastsock osu bw -m 64K:4M
  fastsock osu allreduce --np 2,4 -f --plot allreduce.svg
  fastsock osu bcast --algorithm binomial --json -
  fastsock osu --algorithms`

/** The command. */
export function osuCommand (): Command {
  return new Command('osu')
    .description('OSU-style message-passing benchmarks of fastsock/mpi beside Node net and Open MPI (C)')
    .argument('[benchmark]', `one of ${BENCHMARKS.join(', ')}`, parseBenchmark)
    .option('-m, --message-size <[min:]max>', 'message sizes in bytes (e.g. 0:4096, 1M, 8:)', parseMessageRange)
    .option('-i, --iterations <n>', 'timed iterations up to 8 KiB (above: OSU\'s large count, at most this)', positiveInt)
    .option('-x, --warmup <n>', 'warm-up iterations up to 8 KiB (above: OSU\'s, at most this)', nonNegativeInt)
    .option('-f, --full', 'collectives: also min and max latency over the ranks, and iterations')
    .addOption(new Option('--np <P>', 'ranks, or a comma-separated list (each its own jobs)').default([2], '2').argParser(parseNp))
    .option('--algorithm <name>', 'collectives: force this algorithm of fastsock/mpi (see --algorithms)')
    .option('--algorithms', "print fastsock/mpi's collective algorithm selection table and exit")
    .option('--quick', 'sizes in powers of four up to 64 KiB, few iterations: seconds (tests, CI)')
    .option('--await', "time the awaited forms (the event loop's tier): send()/recv() for latency, barrier()/bcast()/allreduce() for those collectives, instead of the blocking sendSync()/recvSync() and barrierSync()/bcastSync()/allreduceSync(), which OSU's MPI calls are")
    .option('--jit-warmup-ms <ms>', 'the Node ranks: untimed passes over every size for this long before the first timed one, so that V8 has optimized the data path (default 3000 per rank per CPU: 6000 for 4 ranks on 2 CPUs; --quick 0; Open MPI: none)', nonNegativeInt)
    .addOption(new Option('--impls <list>', 'implementations to run: fastsock, node-net, openmpi').default(['fastsock', 'node-net', 'openmpi'], 'all').argParser(parseImpls))
    .addOption(new Option('--timeout <s>', 'end a job that makes no progress for this long').default(120).argParser(positiveInt))
    .option('--json <file>', "write the result as JSON to <file> ('-': stdout, the tables go to stderr)")
    .option('--plot <file.svg>', 'write the plot (SVG) to <file.svg>')
    .addHelpText('after', HELP_AFTER)
    .action(async (benchmark: Benchmark | undefined, raw: RawOsuOptions, cmd: Command) => {
      if (raw.algorithms === true) {
        process.exitCode = await printAlgorithms()
        return
      }
      if (benchmark === undefined) cmd.error(`error: missing benchmark: one of ${BENCHMARKS.join(', ')} (or --algorithms)`, { exitCode: 2 })
      let opts
      try {
        opts = resolveOptions(benchmark as Benchmark, raw)
      } catch (err) {
        if (err instanceof InvalidArgumentError) cmd.error(`error: ${err.message}`, { exitCode: 2 })
        throw err
      }
      if (opts.algorithm !== null) {
        const known = loadMpi().algorithmTable().filter((r) => r.collective === opts.benchmark).map((r) => r.algorithm)
        if (!known.includes(opts.algorithm)) cmd.error(`error: unknown ${opts.benchmark} algorithm '${opts.algorithm}': one of ${known.join(', ')} (see --algorithms)`, { exitCode: 2 })
      }
      process.exitCode = await osuAction(opts)
    })
}

/** H4's selection table (fastsock/mpi's algorithmTable()), as a terminal table. */
async function printAlgorithms (): Promise<number> {
  requireOptional(['cli-table3'], 'fastsock osu --algorithms')
  const rows = loadMpi().algorithmTable()
  const t = table(['collective', 'algorithm', 'when', 'source'], ['left', 'left', 'left', 'left'])
  for (const r of rows) t.push([r.collective, r.algorithm, r.when, r.source])
  const text = `fastsock/mpi: collective algorithms, chosen by message size and P (force one with --algorithm <name>, ` +
    `{ algorithm } per call, or FASTSOCK_MPI_COLL_<COLLECTIVE>=<name>)\n${t.toString()}\n`
  await writeOut('-', text)
  return rows.length > 0 ? 0 : 1
}

async function osuAction (opts: ReturnType<typeof resolveOptions>): Promise<number> {
  requireOptional(['simple-statistics', 'cli-table3'], 'fastsock osu')
  const progress = (msg: string): void => { if (process.stderr.isTTY) process.stderr.write(`${msg}\n`) }
  const result = await runOsu(opts, progress)
  const notes: string[] = []
  if (opts.plot !== null) await writePlot(opts.plot, () => renderSvg(result), notes, result.errors)
  if (opts.json !== null && opts.json !== '-') notes.push(`json: ${opts.json}`)
  const human = opts.json === '-' ? process.stderr : process.stdout
  const report = renderReport(result) + (notes.length > 0 ? `wrote ${notes.join(', ')}\n` : '')
  await new Promise<void>((resolve) => human.write(report, () => resolve()))
  if (opts.json !== null) await writeOut(opts.json, renderJson(result))
  const ran = result.runs.filter((r) => r.ran).length
  return result.errors.length > 0 || ran === 0 ? 1 : 0
}
