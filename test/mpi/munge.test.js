'use strict'
// The job secret MUNGE seals under Slurm (lib/mpi/munge.ts), against a real munged this test
// starts (its own key and socket, as test/helpers/slurm.js does): a sealed secret opens for this
// user and names its job; a credential of another job, one minted by another user (nobody) for
// us, and one not restricted to our uid are refused; nobody cannot open ours; a store that seals
// its secret lets in a client that opens it and refuses one that cannot. Skipped (with the reason)
// without munged; as nobody only as root.
const t = require('tap')
const crypto = require('crypto')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawn, spawnSync } = require('child_process')
const { need, IS_ROOT } = require('../helpers/mpi-launchers')
const munge = require('../../dist/mpi/munge')
const { StoreServer, StoreClient } = require('../../dist/mpi/store')

const dep = need(t, ['munged', 'munge', 'unmunge'], "Debian's munge")
if (dep.skip) {
  t.plan(0, dep.skip)
} else {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fsmpi-munge-'))
  fs.chmodSync(dir, 0o711) // nobody may reach the socket (munged itself decides what it may decode)
  const socket = path.join(dir, 'munge.socket')
  const key = path.join(dir, 'munge.key')
  fs.writeFileSync(key, crypto.randomBytes(1024), { mode: 0o400 })
  let daemon = null
  const m = { munge: dep.paths.munge, unmunge: dep.paths.unmunge, socket }
  const NOBODY = { uid: 65534, gid: 65534 }

  t.before(async () => {
    daemon = spawn(dep.paths.munged, ['--foreground', '--force', `--key-file=${key}`, `--socket=${socket}`,
      `--pid-file=${path.join(dir, 'pid')}`, `--log-file=${path.join(dir, 'log')}`, `--seed-file=${path.join(dir, 'seed')}`], { stdio: 'ignore' })
    for (let i = 0; ; i++) {
      if (fs.existsSync(socket) && spawnSync(dep.paths.munge, ['-n', '-S', socket]).status === 0) break
      if (i > 100) throw new Error('munged did not come up')
      await new Promise(resolve => setTimeout(resolve, 100))
    }
  })
  t.teardown(async () => {
    if (daemon !== null) { daemon.kill('SIGTERM'); await new Promise(resolve => daemon.once('exit', resolve)) }
    fs.rmSync(dir, { recursive: true, force: true })
  })

  /** `munge` run as `as` (spawn options) with `payload` on stdin; its credential. */
  const mint = (payload, args = [], as = {}) => spawnSync(dep.paths.munge, ['-S', socket, ...args], { input: payload, ...as }).stdout

  t.test("slurm.conf's AuthInfo socket, and no MUNGE where its socket is missing", async t => {
    const conf = path.join(dir, 'slurm.conf')
    fs.writeFileSync(conf, `# a comment\nClusterName=x\nAuthType=auth/munge\nAuthInfo=ttl=60, socket=${socket}\n`)
    t.equal(munge.slurmMungeSocket(conf), socket)
    t.same(munge.findMunge({ PATH: process.env.PATH, SLURM_CONF: conf }), m)
    fs.writeFileSync(conf, 'AuthInfo=socket=/nonexistent/munge.socket\n')
    t.equal(munge.findMunge({ PATH: process.env.PATH, SLURM_CONF: conf }), null, 'no socket: no MUNGE')
    t.equal(munge.findMunge({ PATH: '/nonexistent', SLURM_CONF: conf }), null, 'no commands: no MUNGE')
  })

  t.test('a sealed secret opens for this user, for its job only', async t => {
    const sealed = await munge.SealedSecret.create(m, '7.0')
    const cred = await sealed.credential()
    t.match(cred.toString(), /^MUNGE:/)
    t.same(await munge.openSecret(m, cred, '7.0'), sealed.key, 'opened: the same key')
    t.same(await munge.openSecret(m, cred, '7.0'), sealed.key, 'again (replayed): the same key')
    await t.rejects(munge.openSecret(m, await sealed.credential(), '8.0'), { code: 'ERR_MPI_LAUNCH', message: /for job 7\.0, not this job \(8\.0\)/ })
  })

  const uid = process.getuid()
  const payload = `fastsock-mpi/munge/1\n7.0\n${'ab'.repeat(32)}`
  t.test('credentials that do not qualify are refused', async t => {
    await t.rejects(munge.openSecret(m, mint(payload), '7.0'), { code: 'ERR_MPI_LAUNCH', message: /for uid \(anyone\)|for uid 0/ }, 'not restricted to our uid')
    await t.rejects(munge.openSecret(m, mint('hello', ['-u', String(uid)]), '7.0'), { code: 'ERR_MPI_LAUNCH', message: /does not carry/ })
    await t.rejects(munge.openSecret(m, Buffer.from('MUNGE:garbage:'), '7.0'), { code: 'ERR_MPI_LAUNCH', message: /does not open here: status/ })
    await t.rejects(munge.openSecret(m, Buffer.alloc(4096, 65), '7.0'), { code: 'ERR_MPI_LAUNCH', message: /at most 2048/ })
  })

  t.test('another user cannot mint a secret for us, nor open ours', { skip: !IS_ROOT && 'needs root to run munge as nobody' }, async t => {
    // A fake store run by nobody seals its own secret for our uid: we refuse it (encoder uid).
    const forged = mint(payload, ['-u', String(uid)], NOBODY)
    t.match(String(forged), /^MUNGE:/)
    await t.rejects(munge.openSecret(m, forged, '7.0'), { code: 'ERR_MPI_LAUNCH', message: /made by uid 65534/ })
    // nobody holding our credential (it connected to the store) gets no payload out of munged.
    const sealed = await munge.SealedSecret.create(m, '7.0')
    const r = spawnSync(dep.paths.unmunge, ['-S', socket], { input: await sealed.credential(), ...NOBODY, encoding: 'utf8' })
    t.equal(r.status, 18, 'EMUNGE_CRED_UNAUTHORIZED')
    t.notMatch(r.stdout, /fastsock-mpi/, 'no payload')
  })

  t.test('a store that seals its secret: a client that opens it joins, one that cannot is refused', async t => {
    const sealed = await munge.SealedSecret.create(m, '7.0')
    const server = await StoreServer.listen({ host: '127.0.0.1', port: 0 }, { sealed })
    t.teardown(() => server.close({ graceMs: 0 }))
    const addr = { host: '127.0.0.1', port: server.address.port }
    const c = await StoreClient.connect(addr, { rank: 1, timeoutMs: 5000, openSealed: cred => munge.openSecret(m, cred, '7.0') })
    t.same(c.secret, sealed.key, 'the client learned the key')
    await c.set('k', 'v')
    await t.rejects(StoreClient.connect(addr, { rank: 2, timeoutMs: 5000 }), { code: 'ERR_MPI_LAUNCH' }, 'no way to open it: refused')
    await t.rejects(StoreClient.connect(addr, { rank: 2, timeoutMs: 5000, openSealed: cred => munge.openSecret(m, cred, '9.0') }), { code: 'ERR_MPI_LAUNCH', message: /another job/ })
    t.same(server.connectedRanks, [1])
    await c.finalizing()
    await c.close()
  })
}
