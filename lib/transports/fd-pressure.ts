/**
 * Fd pressure: how close this process is to RLIMIT_NOFILE. A fast rung's set-up needs several fds
 * at once (side-channel sockets and their dups, a memfd, doorbell copies in flight; a connection
 * at rest holds one per end, as TCP); with fewer than FD_HEADROOM fd numbers left above the lowest
 * free one, the chain declines every fast rung and the connection goes to TCP, which then still
 * finds the one fd per end it needs (docs/transports.md, "Resource model").
 */
import { native } from '../native'

/** Fd numbers a fast set-up keeps in reserve below the RLIMIT_NOFILE soft limit. */
export const FD_HEADROOM = 64

/** True when fewer than FD_HEADROOM fd numbers are left (native.shmFdRoom(): one fcntl, one close). */
export function underFdPressure (): boolean {
  return native !== null && typeof native.shmFdRoom === 'function' && native.shmFdRoom() < FD_HEADROOM
}
