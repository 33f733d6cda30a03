'use strict'
// Runs a fastsock/mpi job (test/fixtures/mpi/intruded.js under some launcher) while another
// user's process (test/fixtures/mpi/intruder.js, as nobody) attacks its store and every rank's
// device listener: floods of silent and dribbling connections, forged store and device
// handshakes, garbage. The ranks wait for the attack to be under way (the FSMPI_GO file), then
// communicate and check their results while it goes on. Needs root (to run a child as nobody).
const crypto = require('crypto')
const fs = require('fs')
const os = require('os')
const path = require('path')
const readline = require('readline')
const { spawn } = require('child_process')

const ROOT = path.join(__dirname, '..', '..')
const VICTIM = path.join(ROOT, 'test', 'fixtures', 'mpi', 'intruded.js')
const INTRUDER = path.join(ROOT, 'test', 'fixtures', 'mpi', 'intruder.js')
const NOBODY = 65534

/**
 * Starts `cmd args` (a launcher running VICTIM) with `env` (FSMPI_GO added) and the intruder
 * once every rank has printed its targets. Resolves { code, outs (rank lines), seen (the
 * intruder's summary), stderr, stdout }.
 */
function underAttack (cmd, args, { env, timeoutMs = 90000, flood = 300 } = {}) {
  const go = path.join(os.tmpdir(), `fsmpi-go-${crypto.randomBytes(6).toString('hex')}`)
  return new Promise(resolve => {
    const job = spawn(cmd, args, { env: { ...env, FSMPI_GO: go }, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let stderr = ''
    let stdout = ''
    const outs = []
    let intruder = null
    let intruderOut = ''
    let goSent = false
    job.stderr.on('data', d => { stderr += d })
    const killer = setTimeout(() => { try { process.kill(-job.pid, 'SIGKILL') } catch {} }, timeoutMs)
    const startIntruder = targets => {
      const T = {
        // A TCP store is on loopback on this host whatever name the launcher gave it.
        store: targets[0].store === null ? null : targets[0].store.path !== undefined ? { path: targets[0].store.path } : { host: '127.0.0.1', port: targets[0].store.port },
        devices: targets.map((t, rank) => ({ rank, addr: t.device.addr, port: t.device.port })),
        jobId: targets[0].jobId,
        size: targets.length
      }
      intruder = spawn('env', ['-i', `PATH=${process.env.PATH}`, `INTRUDER_FLOOD=${flood}`, process.execPath, INTRUDER, JSON.stringify(T)],
        { uid: NOBODY, gid: NOBODY, stdio: ['ignore', 'pipe', 'inherit'] })
      intruder.stdout.on('data', d => {
        intruderOut += d
        if (!goSent && /"attacking":true/.test(intruderOut)) { goSent = true; fs.writeFileSync(go, '') }
      })
    }
    const targets = []
    readline.createInterface({ input: job.stdout }).on('line', line => {
      stdout += line + '\n'
      const s = line.replace(/^\[\d+\] /, '').trim()
      let o
      try { o = JSON.parse(s) } catch { return }
      outs.push(o)
      // Every rank done: the attack covered the whole of their communication. (It stops here:
      // a silent connection held at a rank's listener would keep that rank alive up to the
      // device's 10 s handshake deadline after its finalize.)
      if (o.ok === true && intruder !== null && outs.filter(x => x.ok === true).length === targets.length) intruder.kill('SIGTERM')
      if (o.targets !== undefined) {
        targets[o.rank] = o.targets
        if (targets.filter(Boolean).length === o.targets.size && intruder === null) startIntruder(targets)
      }
    })
    job.once('close', code => {
      clearTimeout(killer)
      try { fs.unlinkSync(go) } catch {}
      const finish = () => {
        try { fs.unlinkSync(go) } catch {}
        const seen = intruderOut.split('\n').filter(l => l.startsWith('{') && !l.includes('attacking')).map(l => JSON.parse(l))[0] ?? null
        resolve({ code, outs, seen, stderr, stdout })
      }
      if (intruder === null) return finish()
      if (intruder.exitCode !== null || intruder.signalCode !== null) return finish()
      intruder.once('close', finish)
      intruder.kill('SIGTERM')
    })
  })
}

/** The checks every launcher's run must pass: the job finished and verified, the intruder got nothing in. */
function checkUnharmed (t, r, size) {
  t.equal(r.code, 0, `the job exits 0\n${r.stderr}\n${r.stdout}`)
  const oks = r.outs.filter(o => o.ok === true).map(o => o.rank).sort()
  t.same(oks, Array.from({ length: size }, (_v, i) => i), 'every rank verified its allreduce, ring and barrier')
  t.ok(r.seen !== null, 'the intruder ran and reported')
  if (r.seen === null) return
  t.ok(r.seen.flood.opened > 0, `its floods connected (${r.seen.flood.opened})`)
  t.ok(r.seen.rounds > 0, `forged handshakes: ${r.seen.rounds} rounds`)
  t.equal(r.seen.store.ok, 0, 'the store never answered it OK (no proof, no registration, no SET, no ABORT)')
  // On the job's host another uid is turned away before any proof: the store at HELLO (peer uid),
  // a rank's listener at HELLO (the TCP socket's owner).
  t.equal(r.seen.store.challenge, 0, 'the store refused its HELLOs by uid: not even a challenge')
  t.equal(r.seen.device.accept, 0, 'the ranks refused its device HELLOs by uid')
  t.ok(r.seen.device.closed > 0, `every forged device handshake was closed (${JSON.stringify(r.seen.device)})`)
  // The store (rank 0) holds at most MAX_UNPROVEN (128) of the intruder's connections: rank 0's
  // descriptors exceed the others' (which hold the same device flood) by about that, not by the
  // 300 + 8 the intruder opened at the store.
  const fds = r.outs.filter(o => o.ok === true).sort((a, b) => a.rank - b.rank).map(o => o.fds)
  const tcpStore = r.outs.some(o => o.targets !== undefined && o.targets.store !== null && o.targets.store.port !== undefined)
  if (tcpStore && fds.length === size) t.ok(fds[0] - Math.max(...fds.slice(1)) <= 128 + 40, `rank 0 holds ${fds[0]} descriptors, the others ${fds.slice(1).join(', ')}`)
  return r.seen
}

module.exports = { VICTIM, underAttack, checkUnharmed }
