/**
 * NPB IS (integer sort), NAS report RNR-94-007 and NPB 3.4's MPI version: rank 2^n keys in
 * [0, 2^k) (n, k per class), ten times, by a bucket sort spread over the ranks.
 *
 * Keys: each is floor(k/4 · (r1 + r2 + r3 + r4)) of four consecutive numbers of NPB's generator
 * (seed 314159265, a = 5^13; roughly Gaussian around k/2); rank r makes its contiguous share,
 * starting its generator 4·(2^n/P)·r steps in. Each iteration (the `rank` step):
 * 1. two keys change (rank 0: key[i] = i, key[i + 10] = 2^k - i), so every iteration differs;
 * 2. local counts of the keys per bucket (the top bits), the keys copied into bucket order;
 * 3. allreduce (SUM) of the bucket counts, with five test keys' values carried in five extra
 *    slots (only the rank holding a test key puts its value there);
 * 4. buckets are dealt to ranks in order, a rank's share closing once the running total reaches
 *    (r + 1)·2^n/P keys; alltoall of the send counts, then alltoallv of the keys;
 * 5. each rank counts its keys per value over its range and prefix-sums them: the rank of a key
 *    is the number of keys below it (plus the keys of the ranks before).
 * Partial verification (every timed iteration): the ranks of the five test keys against NPB's
 * values, shifted by the iteration per class. Full verification (untimed, after the loop):
 * the keys placed by their ranks must be sorted, and each rank's first key not below the
 * previous rank's last (a point-to-point send to the next rank). Verified when the partial
 * checks passed 5·10 times and every rank's full check passed. Timed region: the ten iterations,
 * after one untimed one (the maximum over ranks, a reduce). Mop/s = 10·2^n / t / 10^6.
 */
import { allreduce } from '../collectives'
import { A, power46, randlc, vranlc } from '../random'
import type { KernelOptions, KernelResult, MpiModule, NpbClass, NpbKernel } from '../types'
import type { Comm } from 'fastsock/mpi'

/** log2 of total keys, of the key range, of the buckets (NPB 3.4's IS). */
const PARAMS: Record<NpbClass, [number, number, number]> = {
  S: [16, 11, 9],
  W: [20, 16, 10],
  A: [23, 19, 10],
  B: [25, 21, 10],
  C: [27, 23, 10]
}
/** Test keys: their indices in the key sequence, and their ranks in the first iteration's sort (before the per-class shift). */
const TEST_INDEX: Record<NpbClass, number[]> = {
  S: [48427, 17148, 23627, 62548, 4431],
  W: [357773, 934767, 875723, 898999, 404505],
  A: [2112377, 662041, 5336171, 3642833, 4250760],
  B: [41869, 812306, 5102857, 18232239, 26860214],
  C: [44172927, 72999161, 74326391, 129606274, 21736814]
}
const TEST_RANK: Record<NpbClass, number[]> = {
  S: [0, 18, 346, 64917, 65463],
  W: [1249, 11698, 1039987, 1043896, 1048018],
  A: [104, 17523, 123928, 8288932, 8388264],
  B: [33422937, 10244, 59149, 33135281, 99],
  C: [61147, 882988, 266290, 133997595, 133525895]
}
const ITERATIONS = 10
const TESTS = 5
const SEED = 314159265
/** Tag of full verification's boundary key. */
const TAG_BOUNDARY = 1000

/** The expected rank of test key `i` at `iteration`: NPB's shift per class. */
function expectedRank (cls: NpbClass, i: number, iteration: number): number {
  const r = TEST_RANK[cls][i]
  switch (cls) {
    case 'S': case 'C': return i <= 2 ? r + iteration : r - iteration
    case 'W': return i < 2 ? r + iteration - 2 : r - iteration
    case 'A': return i <= 2 ? r + iteration - 1 : r - (iteration - 1)
    case 'B': return i === 1 || i === 2 || i === 4 ? r + iteration : r - iteration
  }
}

/** One rank's arrays and its share of the problem, made once (untimed). */
interface State {
  cls: NpbClass
  comm: Comm
  mpi: MpiModule
  opts: KernelOptions
  numKeys: number
  maxKey: number
  buckets: number
  shift: number
  keys: Int32Array
  buff1: Int32Array
  buff2: Int32Array
  bucketSize: Int32Array
  bucketTotals: Int32Array
  bucketPtrs: Int32Array
  first: Int32Array
  last: Int32Array
  sendCount: Int32Array
  recvCount: Int32Array
  sendDispl: Int32Array
  recvDispl: Int32Array
  /** Partial verifications passed on this rank. */
  passed: number
  /** After the last iteration: the keys this rank holds, and the lowest key of its range. */
  localKeys: number
  minKey: number
  failures: string[]
}

/** This rank's keys: generator numbers 4·numKeys·rank onwards, four per key. */
function makeKeys (s: State): void {
  const { comm, numKeys, keys } = s
  const perKey = 4
  const state = new Float64Array([SEED])
  // Jump to this rank's share: SEED · (a^(4·numKeys))^rank mod 2^46.
  if (comm.rank > 0) randlc(state, power46(power46(A, perKey * numKeys), comm.rank))
  const chunk = 4096
  const r = new Float64Array(perKey * chunk)
  const k = s.maxKey / 4
  for (let at = 0; at < numKeys; at += chunk) {
    const n = Math.min(chunk, numKeys - at)
    vranlc(perKey * n, state, A, r)
    for (let i = 0; i < n; i++) {
      const x = r[4 * i] + r[4 * i + 1] + r[4 * i + 2] + r[4 * i + 3]
      keys[at + i] = Math.floor(k * x)
    }
  }
}

/** One iteration of the ranking (NPB's `rank`). */
async function rankKeys (s: State, iteration: number): Promise<void> {
  const { comm, cls, numKeys, keys, buff1, buff2, bucketSize, bucketTotals, bucketPtrs, first, last, sendCount, recvCount, sendDispl, recvDispl, buckets, shift } = s
  const np = comm.size
  const me = comm.rank
  if (me === 0) {
    keys[iteration] = iteration
    keys[iteration + ITERATIONS] = s.maxKey - iteration
  }
  bucketSize.fill(0)
  first.fill(0)
  last.fill(0)
  // The test keys held here ride in the counts' extra slots.
  const testIndex = TEST_INDEX[cls]
  for (let i = 0; i < TESTS; i++) {
    if (Math.floor(testIndex[i] / numKeys) === me) bucketSize[buckets + i] = keys[testIndex[i] % numKeys]
  }
  for (let i = 0; i < numKeys; i++) bucketSize[keys[i] >> shift]++
  bucketPtrs[0] = 0
  for (let i = 1; i < buckets; i++) bucketPtrs[i] = bucketPtrs[i - 1] + bucketSize[i - 1]
  for (let i = 0; i < numKeys; i++) {
    const key = keys[i]
    buff1[bucketPtrs[key >> shift]++] = key
  }

  await allreduce(comm, bucketSize, bucketTotals, s.mpi.SUM, s.opts.blocking)

  // Deal the buckets to ranks in order: rank j's share closes once the running total reaches (j + 1)·numKeys.
  let total = 0
  let local = 0
  let j = 0
  sendDispl[0] = 0
  first[0] = 0
  for (let i = 0; i < buckets; i++) {
    total += bucketTotals[i]
    local += bucketSize[i]
    if (total >= (j + 1) * numKeys) {
      sendCount[j] = local
      if (j !== 0) {
        sendDispl[j] = sendDispl[j - 1] + sendCount[j - 1]
        first[j] = last[j - 1] + 1
      }
      last[j++] = i
      local = 0
    }
  }
  // Ranks left without a bucket (P close to the bucket count) send and receive nothing.
  for (; j < np; j++) {
    sendCount[j] = 0
    sendDispl[j] = j > 0 ? sendDispl[j - 1] + sendCount[j - 1] : 0
    first[j] = 1
  }

  await comm.alltoall(sendCount, recvCount)
  recvDispl[0] = 0
  for (let i = 1; i < np; i++) recvDispl[i] = recvDispl[i - 1] + recvCount[i - 1]
  await comm.alltoallv(buff1, sendCount, sendDispl, buff2, recvCount, recvDispl)

  // Rank the keys of this rank's range [minKey, maxKey] by counting them per value.
  const minKey = first[me] << shift
  const maxKey = ((last[me] + 1) << shift) - 1
  const range = maxKey - minKey + 1
  buff1.fill(0, 0, range > 0 ? range : 0)
  let lesser = 0
  for (let r = 0; r < me; r++) for (let i = first[r]; i <= last[r]; i++) lesser += bucketTotals[i]
  let localKeys = 0
  for (let i = first[me]; i <= last[me]; i++) localKeys += bucketTotals[i]
  for (let i = 0; i < localKeys; i++) buff1[buff2[i] - minKey]++
  for (let i = 0; i < range - 1; i++) buff1[i + 1] += buff1[i]

  // Partial verification: the rank of each test key in this rank's range (keys below it, all ranks).
  for (let i = 0; i < TESTS; i++) {
    const k = bucketTotals[buckets + i]
    if (minKey <= k && k <= maxKey) {
      let keyRank = (k - 1 >= minKey ? buff1[k - 1 - minKey] : 0) + lesser
      if (s.opts.corrupt && iteration === ITERATIONS && i === 0) keyRank += 1
      if (keyRank === expectedRank(cls, i, iteration)) s.passed++
      else s.failures.push(`Failed partial verification: iteration ${iteration}, processor ${me}, test key ${i}, key rank ${keyRank}`)
    }
  }
  if (iteration === ITERATIONS) {
    s.localKeys = localKeys
    s.minKey = minKey
  }
}

/** NPB's full verification: the keys placed by their ranks are in order, across ranks too. Returns 1 when passed here. */
async function fullVerify (s: State): Promise<number> {
  const { comm, keys, buff1, buff2, localKeys, minKey } = s
  for (let i = 0; i < localKeys; i++) {
    const key = buff2[i]
    keys[--buff1[key - minKey]] = key
  }
  const boundary = new Int32Array(1)
  const mine = new Int32Array([keys[localKeys < 1 ? 0 : localKeys - 1]])
  const recv = comm.rank > 0 ? comm.irecv(boundary, comm.rank - 1, TAG_BOUNDARY) : null
  if (comm.rank < comm.size - 1) await comm.send(mine, comm.rank + 1, TAG_BOUNDARY)
  if (recv !== null) await recv.wait()
  let outOfOrder = 0
  if (comm.rank > 0 && localKeys > 0 && boundary[0] > keys[0]) outOfOrder++
  for (let i = 1; i < localKeys; i++) if (keys[i - 1] > keys[i]) outOfOrder++
  if (outOfOrder !== 0) {
    s.failures.push(`Processor ${comm.rank}:  Full_verify: number of keys out of sort: ${outOfOrder}`)
    return 0
  }
  return 1
}

async function run (mpi: MpiModule, comm: Comm, cls: NpbClass, opts: KernelOptions): Promise<KernelResult> {
  const [totalLog2, maxKeyLog2, bucketsLog2] = PARAMS[cls]
  const np = comm.size
  const numKeys = (2 ** totalLog2) / np
  const maxKey = 2 ** maxKeyLog2
  const buckets = 2 ** bucketsLog2
  const bufferSize = Math.floor(3 * numKeys / 2)
  const s: State = {
    cls,
    comm,
    mpi,
    opts,
    numKeys,
    maxKey,
    buckets,
    shift: maxKeyLog2 - bucketsLog2,
    keys: new Int32Array(bufferSize),
    buff1: new Int32Array(Math.max(bufferSize, maxKey)),
    buff2: new Int32Array(bufferSize),
    bucketSize: new Int32Array(buckets + TESTS),
    bucketTotals: new Int32Array(buckets + TESTS),
    bucketPtrs: new Int32Array(buckets),
    first: new Int32Array(Math.max(np, buckets + TESTS)),
    last: new Int32Array(Math.max(np, buckets + TESTS)),
    sendCount: new Int32Array(np),
    recvCount: new Int32Array(np),
    sendDispl: new Int32Array(np),
    recvDispl: new Int32Array(np),
    passed: 0,
    localKeys: 0,
    minKey: 0,
    failures: []
  }
  makeKeys(s)
  // One untimed iteration: every page and code path touched once.
  await rankKeys(s, 1)
  s.passed = 0
  s.failures.length = 0

  const t0 = performance.now()
  for (let it = 1; it <= ITERATIONS; it++) await rankKeys(s, it)
  const elapsed = (performance.now() - t0) / 1e3

  const time = new Float64Array([elapsed])
  const maxTime = new Float64Array(1)
  if (opts.blocking) await allreduce(comm, time, maxTime, mpi.MAX, true)
  else await comm.reduce(time, maxTime, mpi.MAX, 0)
  const seconds = maxTime[0]

  const counts = new Int32Array([s.passed + await fullVerify(s)])
  const sum = new Int32Array(1)
  if (opts.blocking) await allreduce(comm, counts, sum, mpi.SUM, true)
  else await comm.reduce(counts, sum, mpi.SUM, 0)
  const verified = sum[0] === TESTS * ITERATIONS + np
  if (comm.rank !== 0) for (const f of s.failures) process.stdout.write(`${f}\n`)
  const lines = [
    ...(cls !== 'S' ? ['', '   iteration', ...Array.from({ length: ITERATIONS }, (_v, i) => `        ${i + 1}`)] : []),
    ...s.failures
  ]
  return { size: String(2 ** totalLog2), iterations: ITERATIONS, seconds, mops: ITERATIONS * 2 ** totalLog2 / seconds / 1e6, verified, lines }
}

/** IS for `fastsock npb`. */
export const kernel: NpbKernel = {
  name: 'is',
  title: 'IS Benchmark',
  checkProcs (cls: NpbClass, np: number): string | null {
    if (np < 1 || (np & (np - 1)) !== 0) return `IS needs a power of two ranks (as NPB's): ${np} is not`
    const most = cls === 'S' ? 128 : 1024
    return np > most ? `IS class ${cls} runs on at most ${most} ranks` : null
  },
  run
}
