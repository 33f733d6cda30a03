/**
 * A job secret under Slurm from MUNGE (https://dun.github.io/munge/), the authentication service
 * Slurm itself uses (AuthType=auth/munge): docs/mpi-launch.md, "Threat model".
 *
 * Slurm gives its tasks nothing secret (every SLURM_* value is visible to other users through
 * squeue or the ports it opens), so the store's owner (rank 0) makes the job's secret: 256 random
 * bits, sent to every rank that says HELLO inside a MUNGE credential
 *
 *   munge --restrict-uid=<the job's uid>   payload "fastsock-mpi/munge/1\n<job id>\n<64 hex digits>"
 *
 * The credential's payload is encrypted and MACed with the cluster's munge key, which only munged
 * holds; munged decodes it for a process of the restricted uid only (another user gets
 * EMUNGE_CRED_UNAUTHORIZED, no payload), and says which uid encoded it. A rank accepts the secret
 * when unmunge says: STATUS 0 (or 17, replayed: the credential is minted once a minute and sent
 * to every rank, so a second rank of one host decodes it again; harmless, since it is no bearer
 * token but a sealed envelope only this uid can open), UID (the encoder) and UID_RESTRICTION
 * both this process's uid (a store run by another user cannot mint one), and the job id in the
 * payload this rank's (a store of another job of the same user is not joined). Then the store's
 * usual challenge and response (lib/mpi/auth.ts) proves the secret both ways. The payload goes
 * to `munge` through its stdin, never its command line (which `ps` shows).
 *
 * Where munged listens: the `socket=` of `AuthInfo` in slurm.conf (`SLURM_CONF`, else
 * /etc/slurm/slurm.conf), which is where Slurm finds it; else munge's default socket
 * (/run/munge/munge.socket.2). MUNGE is used when `munge` and `unmunge` are on PATH (or in
 * /usr/bin) and that socket exists; otherwise `findMunge` returns null and the job keeps the
 * behaviour of a job without a secret (one host only).
 *
 * Errors: MpiError ERR_MPI_LAUNCH when munge or unmunge fails or a credential does not qualify,
 * naming why (unmunge's STATUS text, the uids, the job ids).
 */
import { spawn } from 'child_process'
import * as crypto from 'crypto'
import * as fs from 'fs'
import * as path from 'path'
import { mpiError } from './errors'
import { myUid } from './auth'

/** munge's compiled-in socket (Debian, upstream 0.5.12 and later). */
export const DEFAULT_MUNGE_SOCKET = '/run/munge/munge.socket.2'
/** How long the store reuses one credential before minting another, ms (munge's default TTL is 300 s). */
export const CREDENTIAL_REUSE_MS = 60000
/** A munge or unmunge run that takes longer is killed, ms. */
const RUN_MS = 10000
const PAYLOAD_TAG = 'fastsock-mpi/munge/1'
/** Longest credential accepted from a store (a 200-byte payload makes ~400 bytes). */
export const MAX_CREDENTIAL = 2048

/** The MUNGE client commands and munged's socket. */
export interface Munge { munge: string, unmunge: string, socket: string }

function executable (name: string, env: NodeJS.ProcessEnv): string | null {
  for (const dir of (env.PATH ?? '').split(':').concat(['/usr/bin', '/usr/local/bin'])) {
    if (dir === '') continue
    const p = path.join(dir, name)
    try { fs.accessSync(p, fs.constants.X_OK); return p } catch { /* next */ }
  }
  return null
}

/** The `socket=` of AuthInfo in the slurm.conf at `file`, or null (no file, no such setting). */
export function slurmMungeSocket (file: string): string | null {
  let text: string
  try { text = fs.readFileSync(file, 'utf8') } catch { return null }
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim()
    const m = /^AuthInfo\s*=\s*(.+)$/i.exec(line)
    if (m === null) continue
    for (const part of m[1].split(',')) {
      const kv = /^socket=(.+)$/i.exec(part.trim())
      if (kv !== null) return kv[1]
    }
  }
  return null
}

/**
 * MUNGE as this host offers it to a Slurm task, or null when it does not (the commands or
 * munged's socket are missing). Reads slurm.conf (`env.SLURM_CONF`, else /etc/slurm/slurm.conf).
 */
export function findMunge (env: NodeJS.ProcessEnv = process.env): Munge | null {
  const munge = executable('munge', env)
  const unmunge = executable('unmunge', env)
  if (munge === null || unmunge === null) return null
  const conf = env.SLURM_CONF !== undefined && env.SLURM_CONF !== '' ? env.SLURM_CONF : '/etc/slurm/slurm.conf'
  const socket = slurmMungeSocket(conf) ?? DEFAULT_MUNGE_SOCKET
  try {
    if (!fs.statSync(socket).isSocket()) return null
  } catch { return null }
  return { munge, unmunge, socket }
}

/** Runs `cmd args` with `input` on stdin; resolves { code, out, err }. Never rejects for an exit status. */
function run (cmd: string, args: string[], input: Buffer | string): Promise<{ code: number, out: Buffer, err: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['pipe', 'pipe', 'pipe'] })
    const out: Buffer[] = []
    let err = ''
    const timer = setTimeout(() => child.kill('SIGKILL'), RUN_MS)
    child.stdout.on('data', (d: Buffer) => out.push(d))
    child.stderr.on('data', (d: Buffer) => { if (err.length < 4096) err += String(d) })
    child.stdin.on('error', () => { /* the command died first: its status says why */ })
    child.once('error', e => { clearTimeout(timer); reject(mpiError('ERR_MPI_LAUNCH', `cannot run ${cmd}: ${e.message}`, { cause: e })) })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ code: code ?? (signal !== null ? 128 : 1), out: Buffer.concat(out), err: err.trim() })
    })
    child.stdin.end(input)
  })
}

function keyOfHex (hex: string): Buffer {
  return crypto.createHash('sha256').update('fastsock-mpi-secret/munge/').update(hex).digest()
}

async function mint (m: Munge, jobId: string, hex: string, uid: number): Promise<Buffer> {
  const r = await run(m.munge, ['-S', m.socket, '-u', String(uid)], `${PAYLOAD_TAG}\n${jobId}\n${hex}`)
  const cred = r.out.toString('latin1').trim()
  if (r.code !== 0 || !cred.startsWith('MUNGE:')) {
    throw mpiError('ERR_MPI_LAUNCH', `munge (socket ${m.socket}) failed with status ${r.code}: ${r.err || 'no credential'}`)
  }
  return Buffer.from(cred, 'latin1')
}

/**
 * The store's side: one secret for the job, and a credential carrying it that is re-minted once
 * it is CREDENTIAL_REUSE_MS old (so that a rank joining late still gets one within munge's TTL,
 * and a stream of HELLOs costs no more than one munge run a minute).
 */
export class SealedSecret {
  private current: { credential: Buffer, at: number } | null
  private minting: Promise<Buffer> | null = null

  private constructor (private readonly m: Munge, private readonly jobId: string, private readonly hex: string, private readonly uid: number, first: Buffer) {
    this.current = { credential: first, at: Date.now() }
  }

  /** The job's secret key (32 bytes). */
  get key (): Buffer { return keyOfHex(this.hex) }

  /** Makes a secret and its first credential; ERR_MPI_LAUNCH when munge fails. */
  static async create (m: Munge, jobId: string, uid = myUid()): Promise<SealedSecret> {
    const hex = crypto.randomBytes(32).toString('hex')
    return new SealedSecret(m, jobId, hex, uid, await mint(m, jobId, hex, uid))
  }

  /** A credential carrying the secret, fresh enough to be decoded now. */
  credential (): Promise<Buffer> {
    const c = this.current
    if (c !== null && Date.now() - c.at < CREDENTIAL_REUSE_MS) return Promise.resolve(c.credential)
    this.minting ??= mint(this.m, this.jobId, this.hex, this.uid).then(cred => {
      this.current = { credential: cred, at: Date.now() }
      return cred
    }).finally(() => { this.minting = null })
    return this.minting
  }
}

/** unmunge's STATUS codes met here (munge.h's munge_err_t). */
const STATUS_TEXT: Record<number, string> = {
  0: 'Success', 1: 'snafu', 6: 'failed to access munged (socket)', 8: 'invalid credential', 11: 'bad credential version',
  13: 'bad MAC (another munge key)', 15: 'credential expired', 16: 'credential rewound (clock skew)', 17: 'credential replayed', 18: 'unauthorized (restricted to another uid)'
}

/**
 * Opens a credential a store sent: the job's secret key when unmunge decodes it for this process
 * with the qualities of the module comment and the payload names job `jobId`; ERR_MPI_LAUNCH
 * saying what is wrong otherwise.
 */
export async function openSecret (m: Munge, credential: Uint8Array, jobId: string, uid = myUid()): Promise<Buffer> {
  if (credential.byteLength > MAX_CREDENTIAL) throw mpiError('ERR_MPI_LAUNCH', `a munge credential of ${credential.byteLength} bytes (at most ${MAX_CREDENTIAL})`)
  const r = await run(m.unmunge, ['-S', m.socket, '-N', '-k', 'STATUS,UID,UID_RESTRICTION'], Buffer.from(credential))
  const text = r.out.toString('utf8')
  const cut = text.indexOf('\n\n')
  const meta: Record<string, string> = {}
  for (const line of (cut < 0 ? text : text.slice(0, cut)).split('\n')) {
    const kv = /^([A-Z_]+):\s*(.*)$/.exec(line.trim())
    if (kv !== null) meta[kv[1]] = kv[2].trim()
  }
  const status = meta.STATUS !== undefined ? Number(meta.STATUS) : r.code
  if (status !== 0 && status !== 17) {
    throw mpiError('ERR_MPI_LAUNCH', `the store's munge credential does not open here: status ${status} (${STATUS_TEXT[status] ?? r.err})`)
  }
  if (cut < 0 || meta.UID !== String(uid) || meta.UID_RESTRICTION !== String(uid)) {
    throw mpiError('ERR_MPI_LAUNCH', `the store's munge credential was made by uid ${meta.UID ?? '?'} for uid ${meta.UID_RESTRICTION ?? '(anyone)'}, not by and for this user (${uid}): not this job's store`)
  }
  const [tag, job, hex] = text.slice(cut + 2).split('\n')
  if (tag !== PAYLOAD_TAG || hex === undefined || !/^[0-9a-f]{64}$/.test(hex)) {
    throw mpiError('ERR_MPI_LAUNCH', "the store's munge credential does not carry a fastsock/mpi job secret")
  }
  if (job !== jobId) throw mpiError('ERR_MPI_LAUNCH', `the store's munge credential is for job ${job}, not this job (${jobId}): another job's store at this address`)
  return keyOfHex(hex)
}
