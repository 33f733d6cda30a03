/**
 * `fastsock npb <kernel>`: the NAS Parallel Benchmarks' kernels (CG, EP, FT, IS, MG) in
 * TypeScript over fastsock/mpi (issue 34), beside the same code over Node's net and the NAS
 * reference binaries (NPB-MPI under Open MPI's mpirun). Prints each job's report in the NAS
 * format, then the table; `--json`, `--plot`. Exit status: 0 when every cell asked for ran and
 * verified (a cell the kernel refuses, e.g. IS on 3 ranks, is skipped with the reason, not a
 * failure), 1 when a job failed or did not verify, or the kernel is not in this build, 2 for
 * bad usage.
 */
import { Command, InvalidArgumentError, Option } from 'commander'
import { requireOptional } from '../harness/optional'
import { writeOut, writePlot } from '../harness/output'
import { loadKernel } from './kernels'
import { parseClass, parseImpls, parseKernel, parseLauncher, parseNp, positiveInt, resolveOptions, type RawNpbOptions } from './options'
import { renderSvg } from './plot'
import { renderJson, renderReport } from './report'
import { runNpb } from './runner'
import type { KernelName } from './types'

const HELP_AFTER = `
Kernels (NPB 3.4, docs/npb.md): cg (conjugate gradient), ep (embarrassingly parallel: Gaussian
pairs), ft (3-D FFT), is (integer sort), mg (multigrid). Each verifies against NPB's values.
Implementations: fastsock (fastsock/mpi on its default chain: shm on one host), node-net (the
same TypeScript with init({ transports: ['tcp'] }): Node's net), npb-mpi (the NAS reference
binaries <dir>/<kernel>.<class>.x run with Open MPI's mpirun; build them with
shared/tools/npb-ref/build.sh, docs/npb.md).

Examples:
  fastsock npb ep --class S --np 1,2
  fastsock npb is --class A --np 1,2,4 --runs 3 --npb-mpi-bin ./npb-bin --plot is.svg
  fastsock npb ep --class A --np 1,2,3,4 --impls fastsock,npb-mpi --npb-mpi-bin ./npb-bin --json ep.json`

/** The command. */
export function npbCommand (): Command {
  return new Command('npb')
    .description('the NAS Parallel Benchmarks (CG, EP, FT, IS, MG) in TypeScript over fastsock/mpi, beside Node net and the NAS reference')
    .argument('<kernel>', 'cg, ep, ft, is or mg', parseKernel)
    .addOption(new Option('--class <c>', 'problem class: S, W, A, B (C where memory allows)').default('S').argParser(parseClass))
    .addOption(new Option('--np <P>', 'ranks, or a comma-separated list (1,2,4)').default([1], '1').argParser(parseNp))
    .addOption(new Option('--impls <list>', 'fastsock, node-net, npb-mpi (default: fastsock,node-net, and npb-mpi with --npb-mpi-bin)').argParser(parseImpls))
    .option('--npb-mpi-bin <dir>', "the NAS reference binaries (cg.A.x ...), run with Open MPI's mpirun")
    .addOption(new Option('--launcher <name>', 'how the Node ranks start: fastsock (fastsock mpirun), mpirun (Open MPI), srun, env (env:// variables)').default('fastsock').argParser(parseLauncher))
    .option('--blocking', 'the kernels use the blocking collectives (allreduceSync, ...) where they exist')
    .addOption(new Option('--runs <n>', 'jobs per cell; the table shows the median').default(1).argParser(positiveInt))
    .addOption(new Option('--timeout <s>', 'kill a job that has not finished after this many seconds').default(900).argParser(positiveInt))
    .option('--json <file>', "write the result as JSON to <file> ('-': stdout; the reports and tables go to stderr)")
    .option('--plot <file.svg>', 'write the speedup plot (SVG) to <file.svg>')
    .addOption(new Option('--corrupt', 'tests: change one value before verification (must report UNSUCCESSFUL)').hideHelp())
    .addHelpText('after', HELP_AFTER)
    .action(async (kernelName: KernelName, raw: RawNpbOptions, cmd: Command) => {
      let opts
      try {
        opts = resolveOptions(kernelName, raw)
      } catch (err) {
        if (err instanceof InvalidArgumentError) cmd.error(`error: ${err.message}`, { exitCode: 2 })
        throw err
      }
      requireOptional(['simple-statistics', 'cli-table3'], 'fastsock npb')
      let kernel
      try {
        kernel = loadKernel(opts.kernel)
      } catch (err) {
        if ((err as { code?: string }).code === 'ERR_NPB_KERNEL_UNAVAILABLE') {
          process.stderr.write(`fastsock npb: ${(err as Error).message}\n`)
          process.exitCode = 1
          return
        }
        throw err
      }
      const human = opts.json === '-' ? process.stderr : process.stdout
      const say = (text: string): void => { human.write(text) }
      const progress = (msg: string): void => { if (process.stderr.isTTY) process.stderr.write(`${msg}\n`) }
      const result = await runNpb(opts, kernel, progress, say)
      const notes: string[] = []
      if (opts.plot !== null) await writePlot(opts.plot, async () => await renderSvg(result), notes, result.errors)
      if (opts.json !== null && opts.json !== '-') notes.push(`json: ${opts.json}`)
      const text = '\n' + renderReport(result) + (notes.length > 0 ? `wrote ${notes.join(', ')}\n` : '')
      await new Promise<void>((resolve) => human.write(text, () => resolve()))
      if (opts.json !== null) await writeOut(opts.json, renderJson(result))
      const bad = result.errors.length > 0 || result.runs.some((r) => !r.verified) || result.runs.length === 0
      process.exitCode = bad ? 1 : 0
    })
}
