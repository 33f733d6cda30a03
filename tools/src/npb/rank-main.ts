/**
 * One rank of an NPB kernel over fastsock/mpi. `fastsock npb` starts P of them through
 * `fastsock mpirun`'s spawnRanks (env://) with the job in FASTSOCK_NPB_CONFIG (JSON, RankConfig);
 * they run as well under any launcher fastsock/mpi's init understands (`fastsock mpirun`, Open
 * MPI's mpirun, srun, env://), configured by arguments:
 *
 *   node tools/dist/npb/rank-main.js <kernel> <class> [--blocking] [--tcp]
 *   e.g. npx fastsock mpirun -n 4 node tools/dist/npb/rank-main.js ep A
 *
 * Every rank joins the job (`init()`, or `init({ transports: ['tcp'] })` for the Node net
 * baseline), runs the kernel, and finalizes. Rank 0 prints the report as the NAS reference does
 * (stdout) and, when the config names `out`, appends one JSON line to it: { result, np,
 * transport }. Any error: a message on stderr and exit status 1 (the launcher ends the job).
 */
import * as fs from 'fs'
import type { TransportName } from 'fastsock'
import { loadMpi } from '../harness/library'
import { transportsOf } from './collectives'
import { header, results } from './format'
import { loadKernel } from './kernels'
import type { KernelName, KernelResult, NpbClass } from './types'

/** The job a rank runs. */
export interface RankConfig {
  kernel: KernelName
  cls: NpbClass
  /** The blocking forms of the collectives (KernelOptions.blocking). */
  blocking: boolean
  /** Change one value before verification (KernelOptions.corrupt; tests). */
  corrupt: boolean
  /** init's transports (['tcp']: the Node net baseline); null: fastsock's default chain. */
  transports: string[] | null
  /** Rank 0 appends its RankOutput line here; null: only the printed report. */
  out: string | null
}

/** What rank 0 appends to `out`. */
export interface RankOutput { result: KernelResult, np: number, transport: string, report: string }

/** NPB's operation type per kernel (print_results' `Operation type`). */
export const OPERATION: Record<KernelName, string> = {
  cg: 'floating point',
  ep: 'Random numbers generated',
  ft: 'floating point',
  is: 'keys ranked',
  mg: 'floating point'
}

const CLASSES = ['S', 'W', 'A', 'B', 'C']

function configError (why: string): Error {
  return Object.assign(new Error(`fastsock npb rank: ${why}`), { code: 'ERR_NPB_CONFIG' })
}

/** The config from FASTSOCK_NPB_CONFIG, else from `argv` (kernel, class, --blocking, --tcp, --corrupt). Throws ERR_NPB_CONFIG. */
export function readConfig (argv: string[], env: NodeJS.ProcessEnv = process.env): RankConfig {
  const text = env.FASTSOCK_NPB_CONFIG
  if (text !== undefined && text !== '') {
    let c: RankConfig
    try {
      c = JSON.parse(text) as RankConfig
    } catch (err) {
      throw configError(`FASTSOCK_NPB_CONFIG is not JSON: ${(err as Error).message}`)
    }
    if (typeof c.kernel !== 'string' || !CLASSES.includes(c.cls)) throw configError('FASTSOCK_NPB_CONFIG lacks kernel or cls')
    return { kernel: c.kernel, cls: c.cls, blocking: c.blocking === true, corrupt: c.corrupt === true, transports: c.transports ?? null, out: c.out ?? null }
  }
  const words = argv.filter((a) => !a.startsWith('--'))
  const flags = new Set(argv.filter((a) => a.startsWith('--')))
  const [kernel, cls] = words
  if (kernel === undefined || cls === undefined || !CLASSES.includes(cls.toUpperCase())) {
    throw configError('usage: rank-main.js <cg|ep|ft|is|mg> <S|W|A|B> [--blocking] [--tcp] (or FASTSOCK_NPB_CONFIG, set by fastsock npb)')
  }
  for (const f of flags) if (!['--blocking', '--tcp', '--corrupt'].includes(f)) throw configError(`unknown option ${f}`)
  return { kernel: kernel.toLowerCase() as KernelName, cls: cls.toUpperCase() as NpbClass, blocking: flags.has('--blocking'), corrupt: flags.has('--corrupt'), transports: flags.has('--tcp') ? ['tcp'] : null, out: null }
}

/** Runs `config` on this rank; resolves once finalized. `print` gets rank 0's report. */
export async function runRank (config: RankConfig, print: (text: string) => void = (t) => process.stdout.write(t)): Promise<void> {
  const kernel = loadKernel(config.kernel)
  const mpi = loadMpi()
  const comm = await mpi.init(config.transports === null ? undefined : { transports: config.transports as TransportName[] })
  const refusal = kernel.checkProcs(config.cls, comm.size)
  if (refusal !== null) throw Object.assign(new Error(refusal), { code: 'ERR_NPB_PROCS' })
  const head = `${header(kernel.title)}\n Class:  ${config.cls}\n Number of processes: ${comm.size}\n${config.blocking ? ' Collectives: blocking forms\n' : ''}\n`
  if (comm.rank === 0) print(head)
  const result = await kernel.run(mpi, comm, config.cls, { blocking: config.blocking, corrupt: config.corrupt })
  if (comm.rank === 0) {
    const transport = transportsOf(comm)
    const report = result.lines.join('\n') + '\n' + results({
      name: kernel.name.toUpperCase(),
      cls: config.cls,
      size: result.size,
      iterations: result.iterations,
      seconds: result.seconds,
      np: comm.size,
      mops: result.mops,
      operation: OPERATION[kernel.name],
      verified: result.verified,
      transport
    }) + '\n'
    print(report)
    if (config.out !== null) {
      const line: RankOutput = { result, np: comm.size, transport, report: head + report }
      fs.appendFileSync(config.out, JSON.stringify(line) + '\n')
    }
  }
  await mpi.finalize()
}

if (require.main === module) {
  (async () => {
    await runRank(readConfig(process.argv.slice(2)))
  })().then(
    () => process.exit(0),
    (err: unknown) => {
      const e = err as { code?: string, message?: string }
      process.stderr.write(`fastsock npb rank ${process.env.RANK ?? '?'}: ${e?.code !== undefined ? `${e.code}: ` : ''}${e?.message ?? String(err)}\n`)
      process.exit(1)
    }
  )
}
