/**
 * The collectives' algorithms, one record each (as Open MPI's coll/tuned keeps them): the
 * collective, the name, the id the descriptor carries on the wire (check.ts), when it is the
 * default (message size, P, op) and where that rule comes from, when it cannot serve a call, and
 * how it runs: its steps (drive.ts), which both tiers drive, with an optional direct path of the
 * blocking tier, or (an algorithm of the awaited tier only) its `awaited` run. invoke.ts runs
 * every collective's preamble once and dispatches through the record. A new algorithm is one
 * record here.
 * Printed by `fastsock osu --algorithms` through `algorithmTable()`.
 *
 * Forcing: per call `{ algorithm }` or by environment `FASTSOCK_MPI_COLL_<COLLECTIVE>=<algorithm>`
 * (collective in upper snake case: ALLREDUCE, REDUCE_SCATTER_BLOCK, ...; ibcast/iallreduce/ibarrier
 * read BCAST/ALLREDUCE/BARRIER; read once per process, when this module loads). An unknown name throws ERR_MPI_COLL_ALGORITHM. A forced algorithm
 * that cannot serve the call (e.g. a ring allreduce with a non-commutative op, recursive-doubling
 * allgather on 6 ranks): forced per call → throws ERR_MPI_COLL_ALGORITHM naming the reason; forced
 * by the environment (which applies to every call) → the default selection serves that call.
 */
import { mpiError } from '../errors'
import type { NumericArray } from './types'
import type { Op } from './ops'
import type { CollSteps } from './drive'
import type { Algorithm, Call, Case } from './record'
export type { Algorithm, Call, Case }
import { barrierDisseminationSteps, barrierLinearNow, barrierLinearSteps, barrierPairSync, barrierTree, bcastScatterAllgather, bcastTreeNow, bcastTreeSteps, BINOMIAL, LINEAR } from './bcast'
import type { TreeShape } from './bcast'
import { allreducePairSync, allreduceRabenseifnerSteps, allreduceRecursiveDoublingSteps, allreduceRing, reduceBcastRun, reduceBinomialRun, reduceRabenseifnerRun, reduceScatterRingRun, reduceThenScatterRun, scanLinear, scanRecursiveDoubling } from './reduce'
import type { Scanned } from './reduce'
import { allgatherBruck, allgatherRecursiveDoubling, allgatherRing, gatherBinomial, gatherLinear, scatterBinomial, scatterLinear } from './gather'
import type { AllGathered, Gathered, Scattered } from './gather'
import { alltoallBruck, alltoallLinear, alltoallPairwise, withSendBytes } from './alltoall'
import type { Exchanged } from './alltoall'
import { SYNC_INLINE_MAX, bytes } from './util'

/**
 * Named thresholds (bytes, ranks), with their sources: MPICH's control variables (MPIR_CVAR_*,
 * after Thakur, Rabenseifner and Gropp 2005), except where a measurement on this VM moved one
 * (said at the constant).
 */
export const THRESHOLDS = {
  /**
   * Open MPI 4.1's coll/tuned fixed decision: the linear barrier for 4 <= P < 8 (else recursive
   * doubling; here dissemination, which is recursive doubling for any P). Measured here at P = 4
   * (docs/mpi-benchmarks.md, "Selection thresholds", "The barrier at 4 to 7 ranks").
   */
  BARRIER_LINEAR_MIN_P: 4,
  BARRIER_LINEAR_MAX_P: 7,
  /** MPIR_CVAR_BCAST_SHORT_MSG_SIZE: below, binomial bcast. */
  BCAST_SHORT_MSG_SIZE: 12288,
  /** MPIR_CVAR_BCAST_MIN_PROCS: fewer ranks, binomial bcast at every size. */
  BCAST_MIN_PROCS: 8,
  /** MPIR_CVAR_REDUCE_SHORT_MSG_SIZE: above (commutative op, items ≥ pof2), Rabenseifner reduce. */
  REDUCE_SHORT_MSG_SIZE: 2048,
  /**
   * Up to it, recursive-doubling allreduce. MPICH's MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE is 2048,
   * which assumes a per-message cost of a few µs; fastsock/mpi's messages cost more (event-loop
   * turns), which moves the crossover up. Measured on this 2-vCPU VM at P = 4 (`fastsock osu allreduce --np 4
   * --algorithm <name>`, best of 5): 16 KiB RD 703 µs vs Rabenseifner 909 µs; 128 KiB RD 2111 µs vs Rabenseifner 1293 µs.
   */
  ALLREDUCE_SHORT_MSG_SIZE: 32768,
  /**
   * At P = 2, up to it, recursive-doubling allreduce (one exchange of n, each rank reducing n);
   * above, Rabenseifner's (two exchanges of n/2, each rank reducing n/2: the reduction, not the
   * copy, is the larger cost there). Measured on this 2-vCPU VM (2026-11-28, `fastsock osu
   * allreduce --np 2 -m 64K:1M --algorithm <name> --jit-warmup-ms 3000`, two runs each, JMB's
   * sextile): 64 KiB RD 9.7-10.4 µs vs Rabenseifner 17.0-17.5; 128 KiB 19.1 vs 15.0-15.5;
   * 256 KiB 35-43 vs 31.4; 512 KiB 72-75 vs 60-61; 1 MiB 188-195 vs 152-158 (Open MPI 4.1.4 in the
   * same hour: 1 MiB 102-105). Until then RD ran at every size at P = 2 (measured before the
   * blocking tier and the SIMD kernels: 1 MiB RD 3.8 ms vs Rabenseifner 4.9 ms).
   */
  ALLREDUCE_PAIR_SHORT_MSG_SIZE: 65536,
  /**
   * At P = 2, above it recursive doubling again: a Rabenseifner allreduce of more than one
   * pipeline segment (DEFAULT_SEGMENT_BYTES, 1 MiB) runs in the awaited tier only, RD's one
   * exchange in the blocking tier at any size. Measured as above (p50 of 200 allreduceSync calls
   * with a barrier between, `node bench/mpi-exchange.js`): 2 MiB RD 0.29 ms vs Rabenseifner 1.41 ms; 4 MiB 0.79-0.89 vs 2.2-2.6.
   */
  ALLREDUCE_PAIR_LONG_MSG_SIZE: 1024 * 1024,
  /**
   * With at most this many ranks, binomial reduce at every size: fewer messages than
   * Rabenseifner's reduce-scatter + gather. Measured on this VM at P = 4 (`fastsock osu reduce --np 4 --algorithm <name>`, best of 4): 16 KiB
   * binomial 651 µs vs Rabenseifner 2014 µs; 128 KiB 2291 vs 3477 µs; 1 MiB 7081 vs 11821 µs.
   */
  REDUCE_BINOMIAL_MAX_P: 4,
  /**
   * Total below it on power-of-two P: recursive-doubling allgather. MPICH's
   * MPIR_CVAR_ALLGATHER_SHORT_MSG_SIZE is 81920 (the ring avoids network contention at large
   * sizes, which shared memory does not have); measured here at P = 4 (`fastsock osu allgather --np 4 --algorithm <name>`, best of 4): 128 KiB total
   * RD 770 µs, ring 1129 µs, Bruck 1646 µs; 1 MiB RD 3537 µs, ring 5647 µs, Bruck 4066 µs.
   */
  ALLGATHER_SHORT_MSG_SIZE: 4 * 1024 * 1024,
  /** MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE: total below it, Bruck; at or above, ring. */
  ALLGATHER_LONG_MSG_SIZE: 524288,
  /** MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE: block up to it with ≥ ALLTOALL_MIN_PROCS ranks, Bruck. */
  ALLTOALL_SHORT_MSG_SIZE: 256,
  /** MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE: block up to it, all sends/receives posted at once. */
  ALLTOALL_MEDIUM_MSG_SIZE: 32768,
  /** MPICH's minimum P for Bruck all-to-all (MPIR_CVAR_ALLTOALL_MIN_PROCS... "bruck if P ≥ 8"). */
  ALLTOALL_MIN_PROCS: 8
} as const

const T = THRESHOLDS
const isPof2 = (p: number): boolean => (p & (p - 1)) === 0
const pof2 = (p: number): number => { let x = 1; while (x * 2 <= p) x *= 2; return x }
const TRG = 'Thakur, Rabenseifner, Gropp 2005'

/** Ids of the collectives in the descriptor (check.ts) and the opt-in argument check (index.ts agree). */
export const COLLECTIVE_IDS: Readonly<Record<string, number>> = {
  barrier: 1, bcast: 2, reduce: 3, allreduce: 4, gather: 5, gatherv: 6, scatter: 7, scatterv: 8, allgather: 9, allgatherv: 10, alltoall: 11, alltoallv: 12, reduceScatterBlock: 13, scan: 14, exscan: 15, bcastObject: 16, gatherObject: 17, allgatherObject: 18, dup: 19, split: 20
}

/** A record without run functions: the object collectives' and communicator creation's own algorithm (comms.ts runs it): not in algorithmTable(), not forced. */
type Row = Pick<Algorithm, 'collective' | 'name' | 'wire' | 'when' | 'source' | 'cannot'> & { readonly internal: true }
const num = (c: Call): NumericArray => c.buf as NumericArray
const theOp = (c: Call): Op => c.op as Op
/** One segment: the blocking tier's waits serve it (segmented pipelines run with wait()). */
const oneSegment = (c: Call): boolean => c.n <= c.seg
const gathered = (c: Call): Gathered => c.data as Gathered
const scattered = (c: Call): Scattered => c.data as Scattered
const allGathered = (c: Call): AllGathered => c.data as AllGathered
const exchanged = (c: Call): Exchanged => c.data as Exchanged
const scanned = (c: Call): Scanned => c.data as Scanned
/** The bcast down a tree, as steps (a pipeline of c.seg-byte segments), and its direct path for what the small path carries (else the steps). */
const treeBcast = (shape: TreeShape, seg: (c: Call) => number) => (c: Call): CollSteps => bcastTreeSteps(c, bytes(c.buf), c.root, c.seq, 0, shape, seg(c))
const treeBcastNow = (shape: TreeShape, steps: (c: Call) => CollSteps) => (c: Call): CollSteps | null => c.n <= SYNC_INLINE_MAX ? bcastTreeNow(c, c.buf, c.root, c.seq, shape, c.n) : steps(c)
const binomialBcast = treeBcast(BINOMIAL, (c) => c.seg)
const linearBcast = treeBcast(LINEAR, () => Infinity)
const rdAllreduce = (c: Call): CollSteps => allreduceRecursiveDoublingSteps(c, num(c), theOp(c), c.seq)

const nonCommutative = (c: Case): string | null => c.commute ? null : 'the op is not commutative'
const needsPof2 = (c: Case): string | null => isPof2(c.P) ? null : `P = ${c.P} is not a power of two`

const ALGORITHMS: ReadonlyArray<Row | Algorithm> = [
  { collective: 'barrier', name: 'dissemination', wire: 1, when: `P < ${T.BARRIER_LINEAR_MIN_P} or P > ${T.BARRIER_LINEAR_MAX_P}`, source: `${TRG} 3.1; Hensgen, Finkel, Manber 1988`,
    steps: (c) => barrierDisseminationSteps(c, c.seq), direct: (c) => c.size === 2 ? barrierPairSync(c, c.seq) : barrierDisseminationSteps(c, c.seq) },
  { collective: 'barrier', name: 'linear', wire: 5, when: `${T.BARRIER_LINEAR_MIN_P} ≤ P ≤ ${T.BARRIER_LINEAR_MAX_P}`, source: 'Open MPI 4.1 coll/tuned fixed decision (basic linear: fan-in to rank 0, fan-out); measured here',
    steps: (c) => barrierLinearSteps(c, c.seq), direct: (c) => barrierLinearNow(c, c.seq) },
  { collective: 'barrier', name: 'tree', wire: 2, when: 'forced only', source: 'binomial fan-in + fan-out (F-MPJ MST)',
    awaited: async (c) => await barrierTree(c, c.seq) },
  { collective: 'bcast', name: 'binomial', wire: 3, when: `bytes < ${T.BCAST_SHORT_MSG_SIZE} or P < ${T.BCAST_MIN_PROCS} (segmented pipeline)`, source: `${TRG} 4.1; MPICH MPIR_CVAR_BCAST_SHORT_MSG_SIZE, _MIN_PROCS; F-MPJ MST`,
    steps: binomialBcast, stepsServe: oneSegment, direct: treeBcastNow(BINOMIAL, binomialBcast) },
  { collective: 'bcast', name: 'scatterAllgather', wire: 4, when: `bytes ≥ ${T.BCAST_SHORT_MSG_SIZE} and P ≥ ${T.BCAST_MIN_PROCS}`, source: `${TRG} 4.1 (van de Geijn: binomial scatter + ring allgather)`,
    awaited: async (c) => await bcastScatterAllgather(c, bytes(c.buf), c.root, c.seq) },
  { collective: 'bcast', name: 'linear', wire: 5, when: 'forced only', source: 'root sends to each rank',
    steps: linearBcast, direct: treeBcastNow(LINEAR, linearBcast) },
  { collective: 'reduce', name: 'binomial', wire: 3, when: `bytes ≤ ${T.REDUCE_SHORT_MSG_SIZE}, or P ≤ ${T.REDUCE_BINOMIAL_MAX_P}, or non-commutative op, or items < pof2(P) (segmented pipeline)`, source: `${TRG} 4.4; F-MPJ MST`,
    awaited: reduceBinomialRun },
  { collective: 'reduce', name: 'rabenseifner', wire: 6, when: `bytes > ${T.REDUCE_SHORT_MSG_SIZE}, P > ${T.REDUCE_BINOMIAL_MAX_P}, commutative op, items ≥ pof2(P)`, source: `${TRG} 4.4 (reduce-scatter by recursive halving + gather); MPIR_CVAR_REDUCE_SHORT_MSG_SIZE`, cannot: (c) => nonCommutative(c) ?? (c.items < pof2(c.P) ? 'fewer items than pof2(P)' : null),
    awaited: reduceRabenseifnerRun },
  { collective: 'allreduce', name: 'recursiveDoubling', wire: 7, when: `bytes ≤ ${T.ALLREDUCE_SHORT_MSG_SIZE} (P = 2: ≤ ${T.ALLREDUCE_PAIR_SHORT_MSG_SIZE} or > ${T.ALLREDUCE_PAIR_LONG_MSG_SIZE}), or non-commutative op, or items < P`, source: `${TRG} 4.5; threshold measured here (MPICH: 2048), select.ts THRESHOLDS`,
    steps: rdAllreduce, direct: (c) => c.size === 2 && c.n <= SYNC_INLINE_MAX ? allreducePairSync(c, num(c), theOp(c), c.seq, c.n, c.count) : rdAllreduce(c) },
  { collective: 'allreduce', name: 'rabenseifner', wire: 6, when: `bytes > ${T.ALLREDUCE_SHORT_MSG_SIZE} (P = 2: > ${T.ALLREDUCE_PAIR_SHORT_MSG_SIZE} and ≤ ${T.ALLREDUCE_PAIR_LONG_MSG_SIZE}), P a power of two, commutative op, items ≥ P`, source: `${TRG} 4.5 (reduce-scatter by recursive halving + allgather by recursive doubling)`, cannot: (c) => nonCommutative(c) ?? (c.items < pof2(c.P) ? 'fewer items than pof2(P)' : null),
    steps: (c) => allreduceRabenseifnerSteps(c, num(c), theOp(c), c.seq, c.seg), stepsServe: oneSegment },
  { collective: 'allreduce', name: 'ring', wire: 8, when: `bytes > ${T.ALLREDUCE_SHORT_MSG_SIZE}, P not a power of two, commutative op, items ≥ P`, source: 'Open MPI coll/tuned ring allreduce (reduce-scatter + allgather on a ring); F-MPJ BKT', cannot: (c) => nonCommutative(c) ?? (c.items < c.P ? 'fewer items than P' : null),
    awaited: async (c) => await allreduceRing(c, num(c), theOp(c), c.seq, c.seg) },
  { collective: 'allreduce', name: 'reduceBcast', wire: 9, when: 'forced only', source: 'binomial reduce to rank 0 + binomial bcast (MPI 1 reference)',
    awaited: reduceBcastRun },
  { collective: 'gather', name: 'binomial', wire: 3, when: 'always', source: `${TRG} 4.2`,
    awaited: async (c) => { const d = gathered(c); await gatherBinomial(c, d.own as Uint8Array, d.out, d.block, c.root, c.seq) } },
  { collective: 'gather', name: 'linear', wire: 5, when: 'forced only', source: 'every rank sends to the root',
    awaited: async (c) => { const d = gathered(c); await gatherLinear(c, d.own, d.out, d.place, c.root, c.seq) } },
  { collective: 'gatherv', name: 'linear', wire: 5, when: 'always', source: 'MPICH MPIR_Gatherv_allcomm_linear',
    awaited: async (c) => { const d = gathered(c); await gatherLinear(c, d.own, d.out, d.place, c.root, c.seq) } },
  { collective: 'scatter', name: 'binomial', wire: 3, when: 'always', source: `${TRG} 4.3`,
    awaited: async (c) => { const d = scattered(c); await scatterBinomial(c, d.src, d.own as Uint8Array, d.block, c.root, c.seq) } },
  { collective: 'scatter', name: 'linear', wire: 5, when: 'forced only', source: 'root sends to each rank',
    awaited: async (c) => { const d = scattered(c); await scatterLinear(c, d.src, d.own, d.place, c.root, c.seq) } },
  { collective: 'scatterv', name: 'linear', wire: 5, when: 'always', source: 'MPICH MPIR_Scatterv_allcomm_linear',
    awaited: async (c) => { const d = scattered(c); await scatterLinear(c, d.src, d.own, d.place, c.root, c.seq) } },
  { collective: 'allgather', name: 'recursiveDoubling', wire: 7, when: `total < ${T.ALLGATHER_SHORT_MSG_SIZE} and P a power of two`, source: `${TRG} 4.1; threshold measured here (MPICH: 81920)`, cannot: needsPof2,
    awaited: async (c) => { const d = allGathered(c); await allgatherRecursiveDoubling(c, d.out, d.block, c.seq) } },
  { collective: 'allgather', name: 'bruck', wire: 10, when: `total < ${T.ALLGATHER_LONG_MSG_SIZE}, otherwise`, source: `${TRG} 4.1 (Bruck et al. 1997); MPIR_CVAR_ALLGATHER_LONG_MSG_SIZE`,
    awaited: async (c) => { const d = allGathered(c); await allgatherBruck(c, d.out, d.block, c.seq) } },
  { collective: 'allgather', name: 'ring', wire: 8, when: `total ≥ ${T.ALLGATHER_LONG_MSG_SIZE} (power-of-two P: ≥ ${T.ALLGATHER_SHORT_MSG_SIZE})`, source: `${TRG} 4.1; F-MPJ BKT`,
    awaited: async (c) => { const d = allGathered(c); await allgatherRing(c, d.out, d.place, c.seq) } },
  { collective: 'allgatherv', name: 'ring', wire: 8, when: 'always', source: `${TRG} 4.1 (ring, any counts); F-MPJ BKT`,
    awaited: async (c) => { const d = allGathered(c); await allgatherRing(c, d.out, d.place, c.seq) } },
  { collective: 'alltoall', name: 'bruck', wire: 10, when: `block ≤ ${T.ALLTOALL_SHORT_MSG_SIZE} and P ≥ ${T.ALLTOALL_MIN_PROCS}`, source: `${TRG} 4.6 (Bruck et al. 1997); MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE`,
    awaited: async (c) => await withSendBytes(c, exchanged(c), (d, sb) => alltoallBruck(c, sb, d.out, d.block, c.seq)) },
  { collective: 'alltoall', name: 'linear', wire: 5, when: `block ≤ ${T.ALLTOALL_MEDIUM_MSG_SIZE}, otherwise`, source: `${TRG} 4.6 (isend/irecv scattered); MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE`,
    awaited: async (c) => await withSendBytes(c, exchanged(c), (d, sb) => alltoallLinear(c, sb, d.sendPlace, d.out, d.recvPlace, c.seq)) },
  { collective: 'alltoall', name: 'pairwise', wire: 11, when: `block > ${T.ALLTOALL_MEDIUM_MSG_SIZE}`, source: `${TRG} 4.6 (pairwise exchange)`,
    awaited: async (c) => await withSendBytes(c, exchanged(c), (d, sb) => alltoallPairwise(c, sb, d.out, d.block, c.seq)) },
  { collective: 'alltoallv', name: 'linear', wire: 5, when: 'always', source: 'MPICH MPIR_Alltoallv_intra_scattered',
    awaited: async (c) => await withSendBytes(c, exchanged(c), (d, sb) => alltoallLinear(c, sb, d.sendPlace, d.out, d.recvPlace, c.seq)) },
  { collective: 'reduceScatterBlock', name: 'ring', wire: 8, when: 'commutative op', source: 'ring reduce-scatter (Open MPI coll/base; F-MPJ BKT)', cannot: nonCommutative,
    awaited: reduceScatterRingRun },
  { collective: 'reduceScatterBlock', name: 'reduceThenScatter', wire: 12, when: 'non-commutative op', source: 'binomial reduce to rank 0 (rank order) + binomial scatter (MPICH noncommutative path)',
    awaited: reduceThenScatterRun },
  { collective: 'scan', name: 'recursiveDoubling', wire: 7, when: 'always', source: 'MPICH MPIR_Scan_intra_recursive_doubling',
    awaited: async (c) => { const d = scanned(c); await scanRecursiveDoubling(c, d.mine, d.acc, theOp(c), false, c.seq) } },
  { collective: 'scan', name: 'linear', wire: 5, when: 'forced only', source: 'chain rank r-1 → r',
    awaited: async (c) => { const d = scanned(c); await scanLinear(c, d.mine, d.acc, theOp(c), false, c.seq) } },
  { collective: 'exscan', name: 'recursiveDoubling', wire: 7, when: 'always', source: 'MPICH MPIR_Exscan_intra_recursive_doubling',
    awaited: async (c) => { const d = scanned(c); await scanRecursiveDoubling(c, d.mine, d.acc, theOp(c), true, c.seq) } },
  { collective: 'exscan', name: 'linear', wire: 5, when: 'forced only', source: 'chain rank r-1 → r',
    awaited: async (c) => { const d = scanned(c); await scanLinear(c, d.mine, d.acc, theOp(c), true, c.seq) } },
  { collective: 'bcastObject', name: 'binomial', wire: 3, when: 'always', source: 'binomial bcast of the length, then of the bytes', internal: true },
  { collective: 'gatherObject', name: 'binomial', wire: 3, when: 'always', source: 'binomial gather of the lengths, then linear of the bytes', internal: true },
  { collective: 'allgatherObject', name: 'ring', wire: 8, when: 'always', source: 'ring allgather of the lengths, then of the bytes', internal: true },
  { collective: 'dup', name: 'recursiveDoubling', wire: 7, when: 'always', source: 'MAX allreduce of the context candidates', internal: true },
  { collective: 'split', name: 'ring', wire: 8, when: 'always', source: 'ring allgather of (color, key, rank)', internal: true }
]

/** The default algorithm of a collective for a case (always one that can serve it). */
function byDefault (collective: string, c: Case): string {
  switch (collective) {
    case 'barrier': return c.P >= T.BARRIER_LINEAR_MIN_P && c.P <= T.BARRIER_LINEAR_MAX_P ? 'linear' : 'dissemination'
    case 'bcast': return (c.bytes < T.BCAST_SHORT_MSG_SIZE || c.P < T.BCAST_MIN_PROCS) ? 'binomial' : 'scatterAllgather'
    case 'reduce': return (c.bytes <= T.REDUCE_SHORT_MSG_SIZE || c.P <= T.REDUCE_BINOMIAL_MAX_P || !c.commute || c.items < pof2(c.P)) ? 'binomial' : 'rabenseifner'
    case 'allreduce':
      if (c.P === 2 && (c.bytes <= T.ALLREDUCE_PAIR_SHORT_MSG_SIZE || c.bytes > T.ALLREDUCE_PAIR_LONG_MSG_SIZE)) return 'recursiveDoubling'
      if (c.bytes <= T.ALLREDUCE_SHORT_MSG_SIZE || c.P < 2 || !c.commute || c.items < c.P) return 'recursiveDoubling'
      return isPof2(c.P) ? 'rabenseifner' : 'ring'
    case 'allgather':
      if (c.total < T.ALLGATHER_SHORT_MSG_SIZE && isPof2(c.P)) return 'recursiveDoubling'
      return c.total < T.ALLGATHER_LONG_MSG_SIZE ? 'bruck' : 'ring'
    case 'alltoall':
      if (c.bytes <= T.ALLTOALL_SHORT_MSG_SIZE && c.P >= T.ALLTOALL_MIN_PROCS) return 'bruck'
      return c.bytes <= T.ALLTOALL_MEDIUM_MSG_SIZE ? 'linear' : 'pairwise'
    case 'reduceScatterBlock': return c.commute ? 'ring' : 'reduceThenScatter'
    case 'gather': case 'scatter': return 'binomial'
    case 'allgatherv': return 'ring'
    default: return ALGORITHMS.find(r => r.collective === collective)?.name ?? 'linear'
  }
}

/** FASTSOCK_MPI_COLL_<NAME>: reduceScatterBlock → REDUCE_SCATTER_BLOCK. */
export function envName (collective: string): string {
  return 'FASTSOCK_MPI_COLL_' + collective.replace(/([a-z])([A-Z])/g, '$1_$2').toUpperCase()
}

/**
 * FASTSOCK_MPI_COLL_<NAME> of every collective with records, '' when unset, read from
 * process.env when this module loads (a process.env lookup costs about a microsecond: too much
 * for the 8-byte path) and never written after.
 */
const FORCED: ReadonlyMap<string, string> = new Map(ALGORITHMS.map(r => [r.collective, process.env[envName(r.collective)] ?? '']))
function fromProcessEnv (collective: string): string {
  return FORCED.get(collective) ?? ''
}

const names = new Map<string, Algorithm[]>()
for (const r of ALGORITHMS) { const a = names.get(r.collective) ?? []; a.push(r); names.set(r.collective, a) }
for (const [c, a] of names) {
  if (COLLECTIVE_IDS[c] === undefined) throw mpiError('ERR_MPI_COLL_ALGORITHM', `select.ts: collective ${c} has no id`)
  if (new Set(a.map(r => r.wire)).size !== a.length || a.some(r => !(r.wire >= 1 && r.wire <= 255))) throw mpiError('ERR_MPI_COLL_ALGORITHM', `select.ts: ${c}'s wire ids are not distinct bytes`)
}

/** The record of `collective`'s algorithm `name` (an Error when there is none: a call names only records), else (`wire` a number) the one with that wire id, undefined when none. */
export function algorithmOf (collective: string, name: string): Algorithm
export function algorithmOf (collective: string, wire: number): Algorithm | undefined
export function algorithmOf (collective: string, key: string | number): Algorithm | undefined {
  const rows = names.get(collective)
  if (typeof key === 'number') return rows?.find(r => r.wire === key)
  const r = rows?.find(r => r.name === key)
  if (r === undefined) throw mpiError('ERR_MPI_COLL_ALGORITHM', `${collective}: no record of algorithm '${key}'`)
  return r
}

/** The wire id of `collective`'s algorithm `name`. */
export function wireOf (collective: string, name: string): number {
  return algorithmOf(collective, name).wire
}

/**
 * The algorithm for this call: `forced` (per call) if given, else the environment variable, else
 * the default rule. Throws CollError ERR_MPI_COLL_ALGORITHM for an unknown name, or for a per-call
 * forced algorithm that cannot serve the case; an environment-forced one that cannot falls back
 * to the default.
 */
export function choose (collective: string, c: Case, forced?: string, env?: NodeJS.ProcessEnv): string {
  const fromEnv = forced === undefined
  const name = forced ?? (env === undefined ? fromProcessEnv(collective) : env[envName(collective)])
  if (name === undefined || name === '') return byDefault(collective, c)
  const rows = names.get(collective) ?? []
  const row = rows.find(r => r.name === name)
  if (row === undefined) {
    throw mpiError('ERR_MPI_COLL_ALGORITHM', `${collective}: unknown algorithm '${name}'${fromEnv ? ` (from ${envName(collective)})` : ''}; known: ${rows.map(r => r.name).join(', ')}`)
  }
  const why = row.cannot?.(c) ?? null
  if (why === null) return name
  if (fromEnv) return byDefault(collective, c)
  throw mpiError('ERR_MPI_COLL_ALGORITHM', `${collective}: algorithm '${name}' cannot serve this call: ${why}`)
}

/** The selection table (one row per collective × algorithm), for `fastsock osu --algorithms` and docs. */
export function algorithmTable (): Array<{ collective: string, algorithm: string, when: string, source: string }> {
  return ALGORITHMS.filter(r => !('internal' in r)).map(r => ({ collective: r.collective, algorithm: r.name, when: r.when, source: r.source }))
}
