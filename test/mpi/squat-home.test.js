'use strict'
// A job with no secret known up front survives a squatter that foretold the public candidates
// (docs/mpi-launch.md, "When the port is taken"; lib/mpi/auth.ts candidateKey). env:// on one
// host without a secret, real processes: a process of nobody makes the user's private store
// directory first in a shared TMPDIR (the UNIX socket candidate is refused) and binds MASTER_PORT
// and the loopback port the public derivation gives (storeCandidates without a key). With the
// per-user key in a temporary HOME the store moves to a loopback port nobody could foretell and
// every rank runs an allreduce and a ring and checks them; a second job reuses the key file; with
// the key file refused (mode 620: the public derivation again) the same squat stops the job.
const t = require('tap')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { storeCandidates } = require('../../dist/mpi/launch')
const { candidateKeyPath } = require('../../dist/mpi/auth')
const { cleanEnv, IS_ROOT } = require('../helpers/mpi-launchers')
const { freePort } = require('../../dist/cli/mpirun')


const RANK = require('../helpers/store-squatter').ringRank({ n: 256, timeoutMs: 15000 })

/** Three ranks of RANK by hand (env://, one host); resolves { code, outs (JSON lines), stdout, stderr }. */
const job = (env, timeoutMs = 60000) => require('../helpers/store-squatter').ranksByHand(3, env, RANK, timeoutMs)

if (!IS_ROOT) {
  t.test('the squatter runs as nobody', { skip: 'needs root to run a process as nobody' }, () => {})
} else {
  const { squatStore, squatDir } = require('../helpers/store-squatter')

  /** Squats job `jobId`'s MASTER_PORT and its public loopback candidate; runs the job with `home`. */
  async function squattedJob (t, d, home, jobId) {
    const port = await freePort()
    const pub = storeCandidates({ host: '127.0.0.1', port }, { jobId, key: null, oneHost: true }, { TMPDIR: d.tmp })
    t.match(pub[1], { path: new RegExp(`^${d.tmp}/fastsock-mpi-0/`) }, 'the UNIX socket candidate is in the directory nobody made')
    const sq = await squatStore([port, pub[2].port])
    const env = cleanEnv({ WORLD_SIZE: '3', LOCAL_WORLD_SIZE: '3', MASTER_ADDR: '127.0.0.1', MASTER_PORT: String(port), FASTSOCK_MPI_JOB_ID: jobId, TMPDIR: d.tmp, HOME: home })
    delete env.FASTSOCK_MPI_SECRET
    delete env.FASTSOCK_MPI_SECRET_FILE
    const r = await job(env)
    return { r, seen: await sq.stop(), ports: [port, pub[2].port] }
  }

  t.test('env:// on one host without a secret: the per-user key hides the loopback candidate', async t => {
    const d = squatDir()
    t.teardown(d.cleanup)
    const home = fs.mkdtempSync(path.join(os.tmpdir(), 'fsq-home-'))
    t.teardown(() => fs.rmSync(home, { recursive: true, force: true }))
    const file = candidateKeyPath({ HOME: home })

    const a = await squattedJob(t, d, home, `squat-home-a-${process.pid}`)
    t.equal(a.r.code, 0, `the job exits 0\n${a.r.stderr}\n${a.r.stdout}`)
    t.same(a.r.outs.filter(o => o.ok === true).map(o => o.rank).sort(), [0, 1, 2], 'every rank checked its allreduce and ring')
    t.ok(a.seen.connections > 0, `the ranks met the squatter and went on (${a.seen.connections} connections)`)
    t.equal(a.seen.hellos, 0, 'the squatter\'s uid turned them away before a HELLO')
    t.equal(fs.statSync(path.dirname(file)).mode & 0o777, 0o700, 'key directory mode 700')
    t.equal(fs.statSync(file).mode & 0o777, 0o600, 'key file mode 600')
    const key = fs.readFileSync(file)
    const ino = fs.statSync(file).ino
    t.equal(key.length, 32)

    const b = await squattedJob(t, d, home, `squat-home-b-${process.pid}`)
    t.equal(b.r.code, 0, `a second job exits 0\n${b.r.stderr}\n${b.r.stdout}`)
    t.same(b.r.outs.filter(o => o.ok === true).map(o => o.rank).sort(), [0, 1, 2], 'every rank of it checked')
    t.same(fs.readFileSync(file), key, 'the second job reused the key')
    t.equal(fs.statSync(file).ino, ino, 'the same file')

    // The key refused (group-writable): the public derivation, which the squatter foretold.
    fs.chmodSync(file, 0o620)
    const c = await squattedJob(t, d, home, `squat-home-c-${process.pid}`)
    t.not(c.r.code, 0, 'without the per-user key the squat stops the job')
    const errs = c.r.outs.filter(o => o.error !== undefined)
    t.ok(errs.length > 0 && errs.every(o => o.error === 'ERR_MPI_LAUNCH'), `the ranks say ERR_MPI_LAUNCH: ${JSON.stringify(errs)}`)
    t.ok(errs.some(o => o.message.includes(String(c.ports[1]))), `naming the public loopback candidate ${c.ports[1]}`)
    t.same(fs.readFileSync(file), key, 'a refused key file is left as it is')
  })
}
