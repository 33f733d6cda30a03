/**
 * The object tier of the collectives (bcastObject, gatherObject, allgatherObject: values travel
 * through v8.serialize, the structured-clone serializer) and communicator creation (dup, split,
 * splitLocal, free).
 *
 * Context agreement: every new communicator's context id is the maximum of the members'
 * `_nextContextCandidate()` (each greater than every id its process has used), agreed by one
 * collective on the parent (allreduce MAX for dup, the allgather of (color, key, candidate) for
 * split), so no two communicators sharing a pair of processes share a context, and collective and
 * point-to-point traffic of different communicators never match.
 */
import * as v8 from 'v8'
import { invalidArgType } from '../errors'
import { UNDEFINED } from './types'
import type { CollComm } from './types'
import { MAX } from './ops'
import { allgatherRing, gatherBinomial, gatherLinear } from './gather'
import { BINOMIAL, bcastTreeSteps } from './bcast'
import { allreduceRecursiveDoublingSteps } from './reduce'
import { runAsync } from './drive'
import { DEFAULT_SEGMENT_BYTES, collTag } from './util'
import { dropState } from './state'
import { CheckedComm } from './check'

/**
 * Object-tier broadcast: the root's `obj` (structured clone) to every rank; resolves with the
 * root's obj at the root, a deserialized copy elsewhere. Two binomial broadcasts: the length
 * (8 bytes), then the bytes.
 */
export async function bcastObject (comm: CollComm, obj: unknown, root = 0): Promise<unknown> {
  const seq = comm._collSeq(); const seq2 = comm._collSeq()
  if (comm.size === 1) return obj
  const isRoot = comm.rank === root
  const cc = new CheckedComm(comm, 'bcastObject', 'binomial', root, 0, 0, 0)
  const data = isRoot ? new Uint8Array(v8.serialize(obj)) : null
  const len = new Float64Array([data?.byteLength ?? 0])
  await runAsync(bcastTreeSteps(cc, new Uint8Array(len.buffer), root, seq, 0, BINOMIAL, DEFAULT_SEGMENT_BYTES))
  const buf = data ?? new Uint8Array(len[0])
  await runAsync(bcastTreeSteps(cc, buf, root, seq2, 0, BINOMIAL, DEFAULT_SEGMENT_BYTES))
  return isRoot ? obj : v8.deserialize(buf)
}

/**
 * Object-tier gather: every rank's `obj` in rank order at the root (an array of deserialized
 * copies, the root's own obj at its index); null elsewhere. A binomial gather of the lengths,
 * then a linear gather of the bytes.
 */
export async function gatherObject (comm: CollComm, obj: unknown, root = 0): Promise<unknown[] | null> {
  const seq = comm._collSeq(); const seq2 = comm._collSeq()
  const P = comm.size; const isRoot = comm.rank === root
  if (P === 1) return [obj]
  const data = new Uint8Array(v8.serialize(obj))
  const lens = new Float64Array(isRoot ? P : 1)
  const own = new Float64Array([data.byteLength])
  const cc = new CheckedComm(comm, 'gatherObject', 'binomial', root, 0, 0, 0)
  const note = cc.rootNotice(root, collTag(seq, 0))
  const g = gatherBinomial(cc, new Uint8Array(own.buffer), isRoot ? new Uint8Array(lens.buffer) : null, 8, root, seq)
  if (note !== null) { g.catch(() => {}); await Promise.all([g, note]) } else await g
  if (!isRoot) { await gatherLinear(cc, data, null, () => [0, 0], root, seq2); return null }
  const offs = new Array<number>(P + 1); offs[0] = 0
  for (let i = 0; i < P; i++) offs[i + 1] = offs[i] + lens[i]
  const all = new Uint8Array(offs[P])
  await gatherLinear(cc, data, all, (i) => [offs[i], lens[i]], root, seq2)
  const out: unknown[] = []
  for (let i = 0; i < P; i++) out.push(i === root ? obj : v8.deserialize(all.subarray(offs[i], offs[i + 1])))
  return out
}

/**
 * Object-tier allgather: every rank's `obj` in rank order on every rank (deserialized copies,
 * this rank's own obj at its index). A ring allgather of the lengths, then of the bytes.
 */
export async function allgatherObject (comm: CollComm, obj: unknown): Promise<unknown[]> {
  const seq = comm._collSeq(); const seq2 = comm._collSeq()
  const P = comm.size; const r = comm.rank
  if (P === 1) return [obj]
  const data = new Uint8Array(v8.serialize(obj))
  const lens = new Float64Array(P); lens[r] = data.byteLength
  const cc = new CheckedComm(comm, 'allgatherObject', 'ring', 0, 0, 0, 0)
  await allgatherRing(cc, new Uint8Array(lens.buffer), (i) => [i * 8, 8], seq)
  const offs = new Array<number>(P + 1); offs[0] = 0
  for (let i = 0; i < P; i++) offs[i + 1] = offs[i] + lens[i]
  const all = new Uint8Array(offs[P]); all.set(data, offs[r])
  await allgatherRing(cc, all, (i) => [offs[i], lens[i]], seq2)
  const out: unknown[] = []
  for (let i = 0; i < P; i++) out.push(i === r ? obj : v8.deserialize(all.subarray(offs[i], offs[i + 1])))
  return out
}

/** MPI_Comm_dup: same group, new context (collective on comm). Resolves with the new communicator. */
export async function dup<C extends CollComm> (comm: C): Promise<C> {
  const seq = comm._collSeq()
  const cand = new Float64Array([comm._nextContextCandidate()])
  await runAsync(allreduceRecursiveDoublingSteps(new CheckedComm(comm, 'dup', 'recursiveDoubling', 0, MAX.id, 9, 1), cand, MAX, seq))
  const ranks: number[] = []
  for (let i = 0; i < comm.size; i++) ranks.push(comm._worldRankOf(i))
  return comm._derive(ranks, cand[0]) as C
}

/**
 * MPI_Comm_split (collective on comm): the ranks passing the same `color` (a non-negative integer)
 * form a communicator, ranked by (key, old rank); `color` UNDEFINED gives null.
 * @throws TypeError ERR_INVALID_ARG_TYPE if color or key is not an integer, or color < 0 (other than UNDEFINED).
 */
export async function split<C extends CollComm> (comm: C, color: number, key = 0): Promise<C | null> {
  const seq = comm._collSeq()
  if (!Number.isInteger(color) || (color < 0 && color !== UNDEFINED)) throw invalidArgType(`split: color must be a non-negative integer or UNDEFINED, got ${String(color)}`)
  if (!Number.isInteger(key)) throw invalidArgType(`split: key must be an integer, got ${String(key)}`)
  const P = comm.size; const r = comm.rank
  const table = new Float64Array(3 * P)
  table[3 * r] = color; table[3 * r + 1] = key; table[3 * r + 2] = comm._nextContextCandidate()
  if (P > 1) await allgatherRing(new CheckedComm(comm, 'split', 'ring', 0, 0, 0, 3), new Uint8Array(table.buffer), (i) => [i * 24, 24], seq)
  let ctx = 0
  for (let i = 0; i < P; i++) ctx = Math.max(ctx, table[3 * i + 2])
  if (color === UNDEFINED) return null
  const members: number[] = []
  for (let i = 0; i < P; i++) if (table[3 * i] === color) members.push(i)
  members.sort((a, b) => (table[3 * a + 1] - table[3 * b + 1]) || (a - b))
  return comm._derive(members.map((i) => comm._worldRankOf(i)), ctx) as C
}

/**
 * MPI_Comm_split_type(MPI_COMM_TYPE_SHARED) (collective on comm): the ranks on this host (same
 * `_hostKey`), in old-rank order.
 */
export async function splitLocal<C extends CollComm> (comm: C): Promise<C> {
  const me = comm._hostKey(comm.rank)
  let color = comm.rank
  for (let i = 0; i < comm.size; i++) if (comm._hostKey(i) === me) { color = i; break }
  return await split(comm, color, comm.rank) as C
}

/** MPI_Comm_free: drops the collectives' per-communicator scratch and calls comm._free() if it has one. */
export async function free (comm: CollComm): Promise<void> {
  dropState(comm)
  const f = (comm as unknown as { _free?: () => unknown })._free
  if (typeof f === 'function') await f.call(comm)
}
