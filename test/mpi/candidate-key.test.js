'use strict'
// The per-user candidate key (lib/mpi/auth.ts candidateKey; docs/mpi-launch.md, "When the port is
// taken"): made once in $HOME/.fastsock (directory 700, file 600), reused, refused (null: the
// store's candidate addresses then come from the job id alone) when the file or directory is open
// to others or HOME is unusable; several processes making it at once end with one key.
const t = require('tap')
const crypto = require('crypto')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawn } = require('child_process')
const { candidateKey, candidateKeyPath, CANDIDATE_KEY_BYTES } = require('../../dist/mpi/auth')
const { storeCandidates } = require('../../dist/mpi/launch')

function tempHome (t) {
  const home = fs.mkdtempSync(path.join(os.tmpdir(), 'fsq-home-'))
  t.teardown(() => fs.rmSync(home, { recursive: true, force: true }))
  return home
}

const mode = p => fs.statSync(p).mode & 0o777

t.test('made on first use (directory 700, file 600), the same key on every later use', async t => {
  const home = tempHome(t)
  const env = { HOME: home }
  const file = candidateKeyPath(env)
  t.equal(file, path.join(home, '.fastsock', 'mpi-candidates.key'))
  const k1 = candidateKey(env)
  t.ok(Buffer.isBuffer(k1) && k1.length === CANDIDATE_KEY_BYTES, `${CANDIDATE_KEY_BYTES} bytes`)
  t.equal(mode(path.dirname(file)), 0o700, 'directory mode 700')
  t.equal(mode(file), 0o600, 'file mode 600')
  t.same(fs.readFileSync(file), k1, 'the file holds the key')
  t.same(fs.readdirSync(path.dirname(file)), ['mpi-candidates.key'], 'no temporary file left')
  t.same(candidateKey(env), k1, 'reused')
  const other = candidateKey({ HOME: tempHome(t) })
  t.notSame(other, k1, 'another home, another key')
})

t.test('refused, with the public derivation, when others could write or read it, or HOME is unusable', async t => {
  const a = { host: '127.0.0.1', port: 29500 }
  const pub = storeCandidates(a, { jobId: 'j', key: null, userKey: null, oneHost: true }, { TMPDIR: '/tmp' })
  const home = tempHome(t)
  const env = { HOME: home }
  const k = candidateKey(env)
  const mine = storeCandidates(a, { jobId: 'j', key: null, userKey: k, oneHost: true }, { TMPDIR: '/tmp' })
  t.not(mine[2].port, pub[2].port, 'the key moves the loopback candidate off the public one')
  const file = candidateKeyPath(env)
  for (const m of [0o620, 0o640, 0o604]) {
    fs.chmodSync(file, m)
    t.equal(candidateKey(env), null, `file mode ${m.toString(8)}: refused`)
  }
  fs.chmodSync(file, 0o600)
  t.same(candidateKey(env), k, 'mode 600 again: the key')
  fs.chmodSync(path.dirname(file), 0o770)
  t.equal(candidateKey(env), null, 'directory writable by its group: refused')
  fs.chmodSync(path.dirname(file), 0o755)
  t.same(candidateKey(env), k, 'a directory others may read but not write: the key')
  fs.chmodSync(path.dirname(file), 0o700)
  if (typeof process.getuid === 'function' && process.getuid() === 0) {
    fs.chownSync(file, 65534, 65534)
    t.equal(candidateKey(env), null, 'a file of another uid: refused')
    fs.chownSync(file, 0, 0)
    fs.chownSync(path.dirname(file), 65534, 65534)
    t.equal(candidateKey(env), null, 'a directory of another uid: refused')
    fs.chownSync(path.dirname(file), 0, 0)
  }
  fs.rmSync(file)
  fs.symlinkSync(path.join(tempHome(t), 'elsewhere'), file)
  t.equal(candidateKey(env), null, 'a symbolic link: refused')
  fs.rmSync(file)
  fs.writeFileSync(file, 'short', { mode: 0o600 })
  t.equal(candidateKey(env), null, 'a file of the wrong length: refused after a brief retry')
  t.equal(candidateKey({}), null, 'HOME unset')
  t.equal(candidateKey({ HOME: 'relative/home' }), null, 'HOME not absolute')
  t.equal(candidateKey({ HOME: path.join(home, 'no', 'such') }), null, 'HOME that does not exist')
  t.same(storeCandidates(a, { jobId: 'j', key: null, userKey: null, oneHost: true }, { TMPDIR: '/tmp' }), pub, 'without a key: the public candidates')
  const secret = crypto.randomBytes(32)
  t.same(storeCandidates(a, { jobId: 'j', key: secret, userKey: k, oneHost: false }), storeCandidates(a, { jobId: 'j', key: secret, oneHost: false }), 'a secret known up front wins over the per-user key')
  t.notSame(storeCandidates(a, { jobId: 'j', key: null, userKey: secret, oneHost: false }), storeCandidates(a, { jobId: 'j', key: secret, oneHost: false }), 'one key as secret or as per-user key: distinct labels, distinct ports')
})

t.test('several processes making it at once end with one key', async t => {
  const home = tempHome(t)
  const N = 8
  const start = Date.now() + 600
  const code = `
    const { candidateKey } = require(${JSON.stringify(path.join(__dirname, '..', '..', 'dist', 'mpi', 'auth'))})
    while (Date.now() < ${start}) {}
    const k = candidateKey({ HOME: process.argv[1] })
    console.log(k === null ? 'null' : k.toString('hex'))`
  const outs = await Promise.all(Array.from({ length: N }, () => new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', code, home], { stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.on('data', d => { out += d })
    child.once('error', reject)
    child.once('close', c => resolve({ c, out: out.trim() }))
  })))
  t.ok(outs.every(o => o.c === 0), 'every process exits 0')
  const keys = new Set(outs.map(o => o.out))
  t.equal(keys.size, 1, `one key across ${N} processes: ${[...keys].join(', ')}`)
  t.not([...keys][0], 'null')
  t.equal([...keys][0], fs.readFileSync(candidateKeyPath({ HOME: home })).toString('hex'), 'the one in the file')
  t.same(fs.readdirSync(path.join(home, '.fastsock')), ['mpi-candidates.key'], 'no temporary file left')
})
