/**
 * The peer's side of ./peer-process.ts's envelope, for every tool's peer script: says hello,
 * answers each request with exactly one reply carrying its id, and exits when the IPC channel
 * closes, so a peer cannot outlive the command that forked it.
 */

/**
 * Serves requests with `handle` (its result is the reply's body; a throw becomes `{ ok: false,
 * error }`). `name` is for the message when the script is not started with fork: exit status 2.
 */
export function servePeer<R extends { cmd: string }> (name: string, handle: (req: R) => Promise<Record<string, unknown>>): void {
  if (typeof process.send !== 'function') {
    process.stderr.write(`${name}: start me with child_process.fork\n`)
    process.exit(2)
  }
  const send = process.send.bind(process)
  process.on('message', (req: R & { id: number }) => {
    handle(req).then(
      (rep) => send({ ...rep, id: req.id, ok: true }),
      (err: Error) => send({ id: req.id, ok: false, error: err.message ?? String(err) })
    )
  })
  // The measuring process is gone (or done): so is the peer.
  process.on('disconnect', () => process.exit(0))
  send({ hello: true, pid: process.pid })
}
