/**
 * The collectives the kernels call, in the form `opts.blocking` asks for: the awaited one
 * (`await comm.allreduce(...)`, the default: what a Node program writes) or the blocking one
 * (`comm.allreduceSync(...)`, the call a C program makes), which fastsock/mpi offers for
 * barrier, bcast and allreduce. A blocking call that cannot finish without the event loop
 * (ERR_MPI_WOULD_BLOCK: the first message to a rank, a transport without synchronous reads) goes
 * on as a request, awaited here: the same messages either way.
 */
import type { Comm, NumericArray, Op } from 'fastsock/mpi'

/** ERR_MPI_WOULD_BLOCK's request (fastsock/mpi's MpiError). */
interface WouldBlock { code?: string, request?: { wait: () => Promise<unknown> } }

async function finish (err: unknown): Promise<void> {
  const e = err as WouldBlock
  if (e?.code !== 'ERR_MPI_WOULD_BLOCK' || e.request === undefined) throw err
  await e.request.wait()
}

/** MPI_Allreduce of `send` into `recv` with `op`: allreduceSync when `blocking`, else allreduce. */
export async function allreduce<T extends NumericArray> (comm: Comm, send: T, recv: T, op: Op, blocking: boolean): Promise<T> {
  if (!blocking) return await comm.allreduce(send, recv, op)
  try {
    return comm.allreduceSync(send, recv, op)
  } catch (err) {
    await finish(err)
    return recv
  }
}

/** MPI_Barrier: barrierSync when `blocking`, else barrier. */
export async function barrier (comm: Comm, blocking: boolean): Promise<void> {
  if (!blocking) return await comm.barrier()
  try {
    comm.barrierSync()
  } catch (err) {
    await finish(err)
  }
}

/**
 * The transport the ranks used, as rank 0 sees it: its rung to each other rank (`shm`, `tcp`,
 * ...), several joined by commas when they differ; `self` on one rank.
 */
export function transportsOf (comm: Comm): string {
  const seen = new Set<string>()
  for (let r = 0; r < comm.size; r++) {
    if (r === comm.rank && comm.size > 1) continue
    seen.add(comm.transportOf(r) ?? 'none')
  }
  return [...seen].join(',')
}
