'use strict'
// A process of another user (nobody) that takes a fastsock/mpi job's store port before the
// job's rank 0 does (test/mpi/squat-store.test.js, slurm-srun.test.js), and plays a store there:
// of the connections it gets, one in three answers HELLO with a forged CHALLENGE (a random nonce
// and proof), one with an ERROR claiming ERR_MPI_LAUNCH ("rank registered twice"), one stays
// silent. It prints {"listening": [ports]} once bound, and at SIGTERM {"connections": n,
// "hellos": m}. Plain net and crypto only (it runs without fastsock's addon). squatDir: nobody
// makes the user's private store directory first. Needs root.
const readline = require('readline')
const { jsonEvents } = require('./json-events')
const { spawn } = require('child_process')

const NOBODY = 65534

const CODE = `
const net = require('net')
const crypto = require('crypto')
const { ports, host } = JSON.parse(process.argv[1])
const seen = { connections: 0, hellos: 0 }
function frame (op, id, ...parts) { const body = Buffer.concat(parts); const b = Buffer.alloc(9 + body.length); b.writeUInt32LE(5 + body.length, 0); b[4] = op; b.writeUInt32LE(id, 5); body.copy(b, 9); return b }
function str (s) { const b = Buffer.from(s); const o = Buffer.alloc(2 + b.length); o.writeUInt16LE(b.length, 0); b.copy(o, 2); return o }
const held = []
let bound = 0
for (const port of ports) {
  const server = net.createServer(s => {
    const kind = seen.connections++ % 3
    held.push(s)
    s.on('error', () => {})
    let got = Buffer.alloc(0)
    s.on('data', d => {
      got = Buffer.concat([got, d])
      if (got.length < 9 || got[4] !== 1) return
      seen.hellos++
      const id = got.readUInt32LE(5)
      got = Buffer.alloc(0)
      if (kind === 0) s.write(frame(0x85, id, crypto.randomBytes(32), crypto.randomBytes(32)))
      else if (kind === 1) s.write(frame(0x84, id, str('ERR_MPI_LAUNCH'), str('rank 1 registered twice with the store (two jobs sharing one store address?)')))
    })
  })
  server.on('error', err => { console.log(JSON.stringify({ error: err.code, port })); process.exit(2) })
  server.listen(port, host, () => { if (++bound === ports.length) console.log(JSON.stringify({ listening: ports })) })
}
process.on('SIGTERM', () => { console.log(JSON.stringify(seen)); process.exit(0) })
`

/**
 * Starts the squatter as nobody on `ports` of `host` (default every IPv4 interface). Resolves
 * once it listens with { stop() → Promise<{ connections, hellos }> }; rejects when it cannot bind.
 */
function squatStore (ports, host = '0.0.0.0') {
  const child = spawn('env', ['-i', `PATH=${process.env.PATH}`, process.execPath, '-e', CODE, JSON.stringify({ ports, host })],
    { uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'inherit'] })
  const { next } = jsonEvents(child, 'the squatter')
  return next(o => o.listening !== undefined || o.error !== undefined).then(o => {
    if (o.error !== undefined) throw new Error(`the squatter could not bind port ${o.port}: ${o.error}`)
    return {
      child,
      stop () {
        child.kill('SIGTERM')
        return next(o => o.connections !== undefined)
      }
    }
  })
}

/**
 * A shared temporary directory (mode 1777, as /tmp) in which nobody has made this user's
 * `fastsock-mpi-<uid>` first (mode 700, its own). Returns { tmp (for TMPDIR), cleanup() }.
 */
function squatDir () {
  const fs = require('fs')
  const { spawnSync } = require('child_process')
  const tmp = fs.mkdtempSync('/tmp/fsq-')
  fs.chmodSync(tmp, 0o1777)
  const r = spawnSync('mkdir', ['-m', '700', `${tmp}/fastsock-mpi-${process.getuid()}`], { uid: NOBODY, gid: NOBODY })
  if (r.status !== 0) throw new Error(`nobody could not make the directory: ${r.stderr}`)
  return { tmp, cleanup: () => fs.rmSync(tmp, { recursive: true, force: true }) }
}

/**
 * The program of one rank of the squatted jobs (`node -e`): init (`timeoutMs`), an allreduce and
 * a ring of `n` Float64Arrays, each checked; prints one JSON line { rank, ok } (with `job`, the
 * Slurm job.step, when `withJob`), or { error, message } and exits 3.
 */
function ringRank ({ n = 1024, timeoutMs = 30000, withJob = false } = {}) {
  const dist = require('path').join(__dirname, '..', '..', 'dist', 'mpi')
  const job = withJob ? ", job: process.env.SLURM_JOB_ID + '.' + process.env.SLURM_STEP_ID" : ''
  return `
const mpi = require(${JSON.stringify(dist)})
;(async () => {
  const comm = await mpi.init({ timeoutMs: ${timeoutMs} })
  const { rank, size } = comm
  const sum = new Float64Array(2)
  await comm.allreduce(new Float64Array([rank + 1, 1]), sum, mpi.SUM)
  if (sum[0] !== size * (size + 1) / 2 || sum[1] !== size) throw new Error('allreduce: ' + sum)
  const got = new Float64Array(${n})
  const from = (rank + size - 1) % size
  await mpi.waitAll([comm.isend(Float64Array.from({ length: ${n} }, (_v, i) => rank * 1e6 + i), (rank + 1) % size, 5), comm.irecv(got, from, 5)])
  for (let i = 0; i < got.length; i++) if (got[i] !== from * 1e6 + i) throw new Error('ring: ' + i)
  console.log(JSON.stringify({ rank, ok: true${job} }))
  await mpi.finalize()
})().catch(err => { console.log(JSON.stringify({ error: err.code, message: err.message })); process.exit(3) })
`
}

/** Runs `cmd args` with `env` in its own process group; resolves { code, outs (JSON lines, a launcher's "[rank] " prefix stripped), stdout, stderr }; SIGKILLs the group after `timeoutMs`. */
function runJob (cmd, args, env, timeoutMs = 60000) {
  return new Promise(resolve => {
    const child = spawn(cmd, args, { env, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    const outs = []
    let stdout = ''
    let stderr = ''
    child.stderr.on('data', d => { stderr += d })
    readline.createInterface({ input: child.stdout }).on('line', l => {
      stdout += l + '\n'
      try { outs.push(JSON.parse(l.replace(/^\[\d+\] /, ''))) } catch {}
    })
    const timer = setTimeout(() => { try { process.kill(-child.pid, 'SIGKILL') } catch {} }, timeoutMs)
    child.once('close', code => { clearTimeout(timer); resolve({ code, outs, stdout, stderr }) })
  })
}

/** `size` ranks of `program` (node -e) by hand under env:// from one shell (RANK, LOCAL_RANK set; `env` the rest); resolves as runJob. */
function ranksByHand (size, env, program, timeoutMs = 60000) {
  const node = `"${process.execPath}" -e "$PROG"`
  const ranks = Array.from({ length: size }, (_v, r) => `RANK=${r} LOCAL_RANK=${env.LOCAL_WORLD_SIZE === '1' ? 0 : r} ${node} & p${r}=$!`).join('; ')
  const waits = Array.from({ length: size }, (_v, r) => `wait $p${r} || s=1`).join('; ')
  return runJob('sh', ['-c', `s=0; ${ranks}; ${waits}; exit $s`], { ...env, PROG: program }, timeoutMs)
}

module.exports = { squatStore, squatDir, ringRank, runJob, ranksByHand, NOBODY }
