/**
 * The job's secret and the challenge/response that proves it (docs/mpi-launch.md, "Threat
 * model"). Every connection of a job (a rank to the store, a rank to a rank) proves that both
 * ends know the job's secret, without sending it:
 *
 *   A -> B  nonceA (32 random bytes)
 *   B -> A  nonceB, proof(secret, 'B', nonceA, nonceB)
 *   A -> B  proof(secret, 'A', nonceA, nonceB)
 *
 * where proof = HMAC-SHA256(secret, label | role | nonceA | nonceB) (RFC 2104; the label binds a
 * proof to its protocol, the role stops a reflected proof). Each side checks the other's with
 * crypto.timingSafeEqual. Same-host connections also check the peer's uid: SO_PEERCRED for a UNIX
 * socket, the socket's owner in /proc/net/tcp{,6} for loopback TCP.
 *
 * Where the secret comes from (`discoverSecret`, first that is present):
 * 1. FASTSOCK_MPI_SECRET (at least 128 bits: >= 32 hex digits, or >= 22 other characters);
 * 2. FASTSOCK_MPI_SECRET_FILE: a file owned by this user with no group/other access, same rule;
 * 3. Open MPI's mpirun: derived from OMPI_MCA_orte_precondition_transports, the 128-bit random
 *    key the launcher gives every rank of the job (HMAC-SHA256 keyed by it over the job id);
 * 4. none (null): the job runs only on one host, loopback listeners and uid checks.
 * `fastsock mpirun` makes a 256-bit secret and passes it as FASTSOCK_MPI_SECRET (the environment
 * of a process is readable through /proc/PID/environ by its own uid and root only).
 *
 * Errors: MpiError ERR_MPI_LAUNCH for a secret that is too short or a secret file others can read.
 *
 * Also here, because it is checked as the secret file is: `candidateKey`, the per-user key in
 * `$HOME/.fastsock/mpi-candidates.key` that hides where a job without a secret known up front
 * moves its store (lib/mpi/launch.ts storeCandidates). It is no job secret and authenticates
 * nothing.
 */
import * as crypto from 'crypto'
import * as fs from 'fs'
import * as path from 'path'
import { format } from 'util'
import { mpiError } from './errors'
import { makeDir, notOwnDir } from './launch'
import { peerCredentials } from '../index'
import type { Socket } from '../index'

/** Bytes of a nonce. */
export const NONCE_BYTES = 32
/** Bytes of a proof (HMAC-SHA256). */
export const PROOF_BYTES = 32
/** Bytes of the secret `fastsock mpirun` makes. */
export const SECRET_BYTES = 32

/** Where a secret came from (for messages; never the secret itself). */
export type SecretSource = 'FASTSOCK_MPI_SECRET' | 'FASTSOCK_MPI_SECRET_FILE' | 'openmpi'

/** A job secret: 32 bytes (SHA-256 of what the source gave), and its source. */
export interface JobSecret { key: Buffer, source: SecretSource }

/** A fresh 256-bit secret as 64 hex digits (what `fastsock mpirun` passes its ranks). */
export function newSecret (): string {
  return crypto.randomBytes(SECRET_BYTES).toString('hex')
}

/** A fresh nonce (NONCE_BYTES random bytes). */
export function newNonce (): Buffer {
  return crypto.randomBytes(NONCE_BYTES)
}

/** The text of a secret, checked to hold at least 128 bits; ERR_MPI_LAUNCH naming `from` otherwise. */
function checkedText (text: string, from: string): string {
  const t = text.trim()
  const enough = /^[0-9a-fA-F]+$/.test(t) ? t.length >= 32 : t.length >= 22
  if (!enough) {
    throw mpiError('ERR_MPI_LAUNCH', `${from} is too short for a job secret (at least 128 bits: 32 hex digits, e.g. \`openssl rand -hex 32\`)`)
  }
  return t
}

function keyOf (text: string, label: string): Buffer {
  return crypto.createHash('sha256').update(`fastsock-mpi-secret/${label}/`).update(text).digest()
}

/**
 * The job's secret from `env` (sources and order in the module comment), or null when the launch
 * gives none. `jobId` is the launcher's job id (binds a launcher-derived key to this job).
 * Throws ERR_MPI_LAUNCH for a too-short secret or a secret file of another user or readable by others.
 */
export function discoverSecret (env: NodeJS.ProcessEnv = process.env, jobId = ''): JobSecret | null {
  const direct = env.FASTSOCK_MPI_SECRET
  if (direct !== undefined && direct !== '') {
    return { key: keyOf(checkedText(direct, 'FASTSOCK_MPI_SECRET'), 'text'), source: 'FASTSOCK_MPI_SECRET' }
  }
  const file = env.FASTSOCK_MPI_SECRET_FILE
  if (file !== undefined && file !== '') {
    let fd: number
    try {
      fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
    } catch (err) {
      throw mpiError('ERR_MPI_LAUNCH', `FASTSOCK_MPI_SECRET_FILE=${file} cannot be read: ${(err as Error).message}`, { cause: err })
    }
    try {
      const problem = privateFileProblem(fs.fstatSync(fd))
      if (problem !== null) throw mpiError('ERR_MPI_LAUNCH', `FASTSOCK_MPI_SECRET_FILE=${file} ${problem}`)
      const text = fs.readFileSync(fd, 'utf8')
      return { key: keyOf(checkedText(text, `FASTSOCK_MPI_SECRET_FILE=${file}`), 'text'), source: 'FASTSOCK_MPI_SECRET_FILE' }
    } finally {
      fs.closeSync(fd)
    }
  }
  const ompi = env.OMPI_MCA_orte_precondition_transports
  if (ompi !== undefined && /^[0-9a-fA-F]{16}-[0-9a-fA-F]{16}$/.test(ompi.trim())) {
    const key = crypto.createHmac('sha256', ompi.trim()).update(`fastsock-mpi-secret/openmpi/${jobId}`).digest()
    return { key, source: 'openmpi' }
  }
  return null
}

/**
 * What makes a file unfit to hold a key (`st` from fstat of the opened file): not a regular file,
 * owned by another uid than this process's, or open to group or others in any way; null when fit.
 */
function privateFileProblem (st: fs.Stats): string | null {
  const uid = typeof process.getuid === 'function' ? process.getuid() : st.uid
  if (!st.isFile()) return 'is not a regular file'
  if (st.uid !== uid) return `belongs to uid ${st.uid}, not to this user (${uid})`
  if ((st.mode & 0o077) !== 0) return `has mode ${(st.mode & 0o777).toString(8)}: others may read it (chmod 600)`
  return null
}

/** Bytes of the per-user candidate key (candidateKey). */
export const CANDIDATE_KEY_BYTES = 32

/** The per-user candidate key's file: `$HOME/.fastsock/mpi-candidates.key`; null without an absolute HOME. */
export function candidateKeyPath (env: NodeJS.ProcessEnv = process.env): string | null {
  const home = env.HOME
  if (home === undefined || !path.isAbsolute(home)) return null
  return path.join(home, '.fastsock', 'mpi-candidates.key')
}

/** Sleeps the thread `ms` milliseconds (a brief retry in a synchronous read). */
function sleepSync (ms: number): void {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
}

/**
 * The key's bytes from `file`: a Buffer of CANDIDATE_KEY_BYTES, 'absent' (ENOENT) or 'short'
 * (another length: being written by a process that could not link, below), or `{ refused }`
 * saying why privateFileProblem refuses it. Throws the system error of a file it cannot read.
 */
function readCandidateKey (file: string): Buffer | 'absent' | 'short' | { refused: string } {
  let fd: number
  try {
    fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return 'absent'
    throw err
  }
  try {
    const problem = privateFileProblem(fs.fstatSync(fd))
    if (problem !== null) return { refused: `${file} ${problem}` }
    const buf = Buffer.alloc(CANDIDATE_KEY_BYTES + 1)
    let n = 0
    for (let got = 1; got > 0 && n < buf.length; n += got) got = fs.readSync(fd, buf, n, buf.length - n, null)
    return n === CANDIDATE_KEY_BYTES ? buf.subarray(0, n) : 'short'
  } finally {
    fs.closeSync(fd)
  }
}

/**
 * Makes `file` in `dir` with CANDIDATE_KEY_BYTES random bytes, mode 600, atomically: written
 * whole to a temporary file of this process (O_EXCL) and hard-linked to `file`, which fails with
 * EEXIST when another process made it first (that key then stands: every process reads one key).
 * Where the file system has no hard links, `file` itself is made with O_EXCL (readers may then
 * see it short for a moment, and retry).
 */
function makeCandidateKey (dir: string, file: string): void {
  const flags = fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW
  const write = (target: string): void => {
    const fd = fs.openSync(target, flags, 0o600)
    try {
      fs.writeSync(fd, crypto.randomBytes(CANDIDATE_KEY_BYTES))
      fs.fsyncSync(fd)
    } finally {
      fs.closeSync(fd)
    }
  }
  const tmp = path.join(dir, `.mpi-candidates.key.${process.pid}.${crypto.randomBytes(6).toString('hex')}`)
  write(tmp)
  try {
    fs.linkSync(tmp, file)
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EEXIST') return
    if (code !== 'EPERM' && code !== 'ENOTSUP' && code !== 'EOPNOTSUPP' && code !== 'EMLINK') throw err
    try { write(file) } catch (e) { if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e }
  } finally {
    try { fs.unlinkSync(tmp) } catch {}
  }
}

/**
 * The per-user candidate key: CANDIDATE_KEY_BYTES random bytes in `$HOME/.fastsock/mpi-candidates.key`
 * (candidateKeyPath), made on first use (the directory mode 700, the file mode 600, atomically:
 * makeCandidateKey) and read on every later one. It keys where a job's store moves when its port
 * is taken (lib/mpi/launch.ts storeCandidates) when no job secret is known to every rank before the
 * store's handshake, so that another user (who cannot create or read files in this user's home)
 * cannot foretell those addresses. It is NOT a job secret and authenticates nothing. Ranks whose
 * homes differ get different keys (docs/mpi-launch.md, "When the port is taken").
 *
 * Null (the candidates then come from the job id alone, as a debug note with FASTSOCK_DEBUG says)
 * when HOME is unset or not absolute, the directory cannot be made, is not a real directory, is
 * another uid's or is writable by group or others, or the file is another uid's, open to group or
 * others, not a regular file, or not CANDIDATE_KEY_BYTES long after ~200 ms of retries. Never throws.
 * Cost: a stat, an open and a 33-byte read once it exists.
 */
export function candidateKey (env: NodeJS.ProcessEnv = process.env): Buffer | null {
  const file = candidateKeyPath(env)
  const refuse = (why: string): null => {
    // FASTSOCK_DEBUG's line, as lib/debug.ts prints it (lib/mpi reaches lib/ only through its facade).
    if (/^(1|true|yes|on)$/i.test(process.env.FASTSOCK_DEBUG ?? '')) {
      process.stderr.write(`fastsock ${process.pid} mpi: ${format('no per-user candidate key (%s): the store\'s candidate addresses come from the job id alone', why)}\n`)
    }
    return null
  }
  if (file === null) return refuse(env.HOME === undefined || env.HOME === '' ? 'HOME is unset' : `HOME=${env.HOME} is not an absolute path`)
  const dir = path.dirname(file)
  try {
    makeDir(dir)
    const st = fs.lstatSync(dir)
    const notOwn = notOwnDir(dir, st)
    if (notOwn !== null) return refuse(notOwn)
    if ((st.mode & 0o022) !== 0) return refuse(`${dir} has mode ${(st.mode & 0o777).toString(8)}: others may write in it`)
    for (let attempt = 0; attempt < 20; attempt++) {
      const got = readCandidateKey(file)
      if (got instanceof Buffer) return got
      if (typeof got === 'object' && 'refused' in got) return refuse(got.refused)
      if (got === 'absent') makeCandidateKey(dir, file)
      else sleepSync(10)
    }
    return refuse(`${file} is not ${CANDIDATE_KEY_BYTES} bytes long`)
  } catch (err) {
    return refuse((err as Error).message)
  }
}

/**
 * HMAC-SHA256(secret, 'fastsock-mpi-proof/' | label | role | nonceA | nonceB): `role` 'A' for the
 * side that sent the first nonce, 'B' for the other; `label` names the protocol ('store', 'hello').
 */
export function proof (secret: Uint8Array, label: string, role: 'A' | 'B', nonceA: Uint8Array, nonceB: Uint8Array): Buffer {
  return crypto.createHmac('sha256', secret).update(`fastsock-mpi-proof/${label}/${role}/`).update(nonceA).update(nonceB).digest()
}

/** Whether `got` is the proof `role` must give (constant time in the proof's bytes). */
export function verify (secret: Uint8Array, label: string, role: 'A' | 'B', nonceA: Uint8Array, nonceB: Uint8Array, got: Uint8Array): boolean {
  if (got.byteLength !== PROOF_BYTES) return false
  return crypto.timingSafeEqual(proof(secret, label, role, nonceA, nonceB), got)
}

function hexPort (p: number): string { return p.toString(16).toUpperCase().padStart(4, '0') }

/** An address as /proc/net/tcp{,6} prints it (hex, host byte order per 32-bit word). */
function procAddr (ip: string): { file: string, hex: string } | null {
  const v4 = ip.startsWith('::ffff:') && ip.includes('.') ? ip.slice(7) : ip
  if (/^\d+\.\d+\.\d+\.\d+$/.test(v4)) {
    const b = v4.split('.').map(Number)
    const le = Buffer.from(b).readUInt32LE(0).toString(16).toUpperCase().padStart(8, '0')
    const mapped = '0000000000000000FFFF0000' + le
    return ip.startsWith('::ffff:') ? { file: '/proc/net/tcp6', hex: mapped } : { file: '/proc/net/tcp', hex: le }
  }
  if (ip === '::1') return { file: '/proc/net/tcp6', hex: '00000000000000000000000001000000' }
  return null
}

/**
 * The uid owning the TCP socket whose local end is `localIp:localPort` and remote end
 * `remoteIp:remotePort`, from /proc/net/tcp{,6} (Linux; the table shows every socket's owner in
 * this network namespace); null when it is not found.
 */
export function tcpSocketUid (localIp: string, localPort: number, remoteIp: string, remotePort: number, chunkBytes = 256 * 1024): number | null {
  const l = procAddr(localIp)
  const r = procAddr(remoteIp)
  if (l === null || r === null || l.file !== r.file) return null
  // Read in chunks and stop at the row: the kernel formats the table as it is read, and a busy
  // host's table is long (measured: 71,000 rows, mostly TIME_WAIT, took 120-350 ms to read and
  // split whole on this machine, at every store and rank connection of a job's start).
  const want = ` ${l.hex}:${hexPort(localPort)} ${r.hex}:${hexPort(remotePort)} `
  let fd: number
  try { fd = fs.openSync(l.file, 'r') } catch { return null }
  try {
    const chunk = Buffer.allocUnsafe(chunkBytes)
    let carry = ''
    for (;;) {
      const n = fs.readSync(fd, chunk, 0, chunk.length, null)
      if (n <= 0) return null
      const text = carry + chunk.toString('latin1', 0, n)
      const at = text.indexOf(want)
      if (at >= 0) {
        // The row may go on in the next chunks: read up to its end.
        let row = text.slice(at)
        while (!row.includes('\n')) {
          const more = fs.readSync(fd, chunk, 0, chunk.length, null)
          if (more <= 0) break
          row += chunk.toString('latin1', 0, more)
        }
        const end = row.indexOf('\n')
        return uidOfRow(end < 0 ? row : row.slice(0, end))
      }
      // Keep the last partial row: the wanted one may straddle two chunks.
      const nl = text.lastIndexOf('\n')
      carry = nl < 0 ? text : text.slice(nl + 1)
    }
  } catch {
    return null
  } finally {
    fs.closeSync(fd)
  }
}

/** The uid of a /proc/net/tcp row from its local address on (local rem st tx:rx tr:when retrnsmt uid). */
function uidOfRow (row: string): number | null {
  const f = row.trim().split(/\s+/)
  const uid = Number(f[6])
  return f.length >= 7 && Number.isInteger(uid) ? uid : null
}

/**
 * The uid of the process at the other end of `socket` (a net.Socket on this host): SO_PEERCRED
 * for a UNIX socket (fastsock's peerCredentials), /proc/net/tcp{,6} for loopback TCP; null when it cannot
 * be told (another host, no addon).
 */
export function peerUid (socket: { remoteAddress?: string, remotePort?: number, localAddress?: string, localPort?: number, _handle?: { fd?: number } | null }): number | null {
  if (socket.remoteAddress === undefined) return peerCredentials(socket as Socket)?.uid ?? null
  if (socket.remotePort === undefined || socket.localAddress === undefined || socket.localPort === undefined) return null
  return tcpSocketUid(socket.remoteAddress, socket.remotePort, socket.localAddress, socket.localPort)
}

/** This process's effective uid (0 where unknown). */
export function myUid (): number {
  return typeof process.geteuid === 'function' ? process.geteuid() : 0
}

/** Default bound on a listener's connections in handshake (HandshakeGate). */
export const MAX_PENDING_HANDSHAKES = 128

/** What the gate needs of a socket (fastsock's, or net's for the store). */
export interface GateSocket { destroy (): void, unref (): unknown, once (event: 'close', listener: () => void): unknown }

/**
 * Bounds a listener's connections whose handshake is not done, against another user's flood
 * (docs/mpi-launch.md, "Floods"): at most `max` at once; past it, each new one cuts the oldest
 * that has not sent a well-formed HELLO, else the oldest pending one, so a flood of silent or
 * dribbling connections holds at most `max` descriptors and a rank that dials gets in. A pending
 * connection is unref'd: it keeps no process alive (a rank exits after finalize while an
 * intruder's connection waits for its handshake deadline).
 *
 * Use, in an accept handler: `gate.admit(sock)` first; `gate.greeted(sock)` once its HELLO is
 * well formed; `gate.done(sock)` when it proved itself (it is a connection now; ref it as such);
 * `gate.closeAll()` when the listener closes. A socket that closes leaves the gate by itself.
 */
export class HandshakeGate {
  /** Pending sockets, oldest first, with whether each sent a well-formed HELLO. */
  private readonly pending = new Map<GateSocket, boolean>()
  /** Connections cut to make room (for tests and reports). */
  evicted = 0

  /**
   * `max`: connections in handshake at once. `unrefPending`: unref each one admitted (the
   * device's listener); false leaves that to the owner (the store, which unrefs its connections
   * itself once the job runs: store.ts).
   */
  constructor (readonly max = MAX_PENDING_HANDSHAKES, private readonly unrefPending = true) {}

  /** Connections in handshake now. */
  get size (): number { return this.pending.size }

  /** Takes `sock` in (unref'd), cutting the connection the class comment says when full. */
  admit (sock: GateSocket): void {
    if (this.pending.size >= this.max) {
      let victim: GateSocket | undefined
      for (const [s, greeted] of this.pending) if (!greeted) { victim = s; break }
      victim ??= this.pending.keys().next().value as GateSocket
      this.pending.delete(victim)
      this.evicted++
      victim.destroy()
    }
    this.pending.set(sock, false)
    if (this.unrefPending) sock.unref()
    sock.once('close', () => this.pending.delete(sock))
  }

  /** `sock` sent a well-formed HELLO: cut after the silent ones. */
  greeted (sock: GateSocket): void {
    if (this.pending.has(sock)) this.pending.set(sock, true)
  }

  /** `sock`'s handshake is over (it proved itself): it leaves the gate. */
  done (sock: GateSocket): void {
    this.pending.delete(sock)
  }

  /** Cuts every connection still in handshake. */
  closeAll (): void {
    for (const s of this.pending.keys()) s.destroy()
    this.pending.clear()
  }
}
