/**
 * The kernels' blocking form (`--blocking`): fastsock/mpi's synchronous calls throw
 * ERR_MPI_WOULD_BLOCK when they cannot finish without the event loop (the first message to a
 * rank, whose connection is still being set up; a transport other than shm), the operation going
 * on as `err.request`. `completeLater` is the catch clause for that: it awaits the rest and
 * rethrows any other error.
 */
export async function completeLater (err: unknown): Promise<void> {
  if ((err as { code?: unknown } | null)?.code !== 'ERR_MPI_WOULD_BLOCK') throw err
  await (err as { request: { wait (): Promise<unknown> } }).request.wait()
}
