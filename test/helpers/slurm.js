'use strict'
// A throwaway one-node Slurm cluster for tests (Debian's slurm-wlm and munge): its own munged
// (own key and socket), slurmctld and slurmd in the foreground, with state, spool, logs and
// configuration under one temp directory, ProctrackType=proctrack/linuxproc and
// TaskPlugin=task/none (no cgroups), MpiParams=ports=... (srun reserves ports per step,
// SLURM_STEP_RESV_PORTS). Needs root (slurmd launches tasks as their user). stop() cancels the
// jobs, stops the three daemons and every slurmstepd whose SLURM_CONF is this cluster's, and
// removes the directory.
const crypto = require('crypto')
const dns = require('dns')
const fs = require('fs')
const net = require('net')
const os = require('os')
const path = require('path')
const { spawn, spawnSync } = require('child_process')

const sleep = ms => new Promise(resolve => setTimeout(resolve, ms))

function freePort () {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => { const { port } = s.address(); s.close(() => resolve(port)) })
  })
}

/** PIDs of live processes whose environment has SLURM_CONF=`conf` (the cluster's slurmstepd). */
function stepdsOf (conf) {
  const pids = []
  for (const name of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue
    try {
      const comm = fs.readFileSync(`/proc/${name}/comm`, 'utf8').trim()
      if (!comm.startsWith('slurmstepd')) continue
      const env = fs.readFileSync(`/proc/${name}/environ`, 'utf8').split('\0')
      if (env.includes(`SLURM_CONF=${conf}`)) pids.push(Number(name))
    } catch {}
  }
  return pids
}

function waitExit (child, ms) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve()
  return Promise.race([new Promise(resolve => child.once('exit', resolve)), sleep(ms)])
}

/**
 * Starts the cluster. `bins` maps munged, munge, slurmctld, slurmd, sinfo, squeue, scancel to
 * paths. Resolves { dir, conf, env (for srun: SLURM_CONF), node, stop(), logs() }; rejects (after
 * stopping what it started) when the node does not come up idle within `readyMs`.
 */
async function startCluster (bins, { readyMs = 45000 } = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fsmpi-slurm-'))
  fs.chmodSync(dir, 0o700)
  for (const d of ['munge', 'state', 'spool', 'log']) fs.mkdirSync(path.join(dir, d), { mode: 0o700 })
  const conf = path.join(dir, 'slurm.conf')
  const env = { ...process.env, SLURM_CONF: conf }
  for (const k of Object.keys(env)) if (k.startsWith('SLURM_') && k !== 'SLURM_CONF') delete env[k]
  const daemons = []
  const logs = () => ['munged.log', 'slurmctld.log', 'slurmd.log'].map(f => {
    try { return `== ${f}\n` + fs.readFileSync(path.join(dir, 'log', f), 'utf8').split('\n').slice(-30).join('\n') } catch { return '' }
  }).join('\n')

  let stopped = false
  const stop = async () => {
    if (stopped) return
    stopped = true
    if (bins.squeue && bins.scancel && daemons.length === 3) {
      const q = spawnSync(bins.squeue, ['-h', '-o', '%i'], { env, encoding: 'utf8', timeout: 5000 })
      const ids = (q.stdout || '').split('\n').map(s => s.trim()).filter(Boolean)
      if (ids.length > 0) spawnSync(bins.scancel, ids, { env, timeout: 5000 })
    }
    for (const d of daemons.slice().reverse()) {
      if (d.exitCode === null && d.signalCode === null) d.kill('SIGTERM')
      await waitExit(d, 5000)
      if (d.exitCode === null && d.signalCode === null) { d.kill('SIGKILL'); await waitExit(d, 2000) }
    }
    for (const pid of stepdsOf(conf)) {
      try { process.kill(pid, 'SIGKILL') } catch {}
    }
    fs.rmSync(dir, { recursive: true, force: true })
  }

  try {
    // munge: its own key and socket (the system's munged, if any, is left alone).
    const key = path.join(dir, 'munge', 'munge.key')
    fs.writeFileSync(key, crypto.randomBytes(1024), { mode: 0o400 })
    const sock = path.join(dir, 'munge', 'munge.socket')
    const mungeLog = fs.openSync(path.join(dir, 'log', 'munged.log'), 'a')
    daemons.push(spawn(bins.munged, ['--foreground', '--force', `--key-file=${key}`, `--socket=${sock}`,
      `--pid-file=${path.join(dir, 'munge', 'munged.pid')}`, `--log-file=${path.join(dir, 'log', 'munged.log')}`,
      `--seed-file=${path.join(dir, 'munge', 'munged.seed')}`], { stdio: ['ignore', mungeLog, mungeLog] }))
    for (let i = 0; ; i++) {
      if (fs.existsSync(sock) && spawnSync(bins.munge, ['-n', '-S', sock], { timeout: 5000 }).status === 0) break
      if (i > 100) throw new Error('munged did not come up')
      await sleep(100)
    }

    // The node is this host under its own name when that resolves (the step's node list then
    // names a host the ranks can reach), else localhost.
    let node = os.hostname()
    try { await dns.promises.lookup(node) } catch { node = 'localhost' }
    const [ctldPort, dPort] = [await freePort(), await freePort()]
    const cpus = os.cpus().length
    fs.writeFileSync(conf, [
      'ClusterName=fsmpitest',
      `SlurmctldHost=${node}(127.0.0.1)`,
      `SlurmctldPort=${ctldPort}`,
      `SlurmdPort=${dPort}`,
      `SlurmUser=${os.userInfo().username}`,
      `SlurmdUser=${os.userInfo().username}`,
      'AuthType=auth/munge',
      'CredType=cred/munge',
      `AuthInfo=socket=${sock}`,
      `StateSaveLocation=${path.join(dir, 'state')}`,
      `SlurmdSpoolDir=${path.join(dir, 'spool')}`,
      `SlurmctldPidFile=${path.join(dir, 'slurmctld.pid')}`,
      `SlurmdPidFile=${path.join(dir, 'slurmd.pid')}`,
      `SlurmctldLogFile=${path.join(dir, 'log', 'slurmctld.log')}`,
      `SlurmdLogFile=${path.join(dir, 'log', 'slurmd.log')}`,
      'ProctrackType=proctrack/linuxproc',
      'TaskPlugin=task/none',
      'MpiDefault=none',
      'MpiParams=ports=12000-12999',
      'SchedulerType=sched/builtin',
      'SelectType=select/cons_tres',
      'SelectTypeParameters=CR_Core',
      'JobCompType=jobcomp/none',
      'AccountingStorageType=accounting_storage/none',
      'JobAcctGatherType=jobacct_gather/none',
      'ReturnToService=2',
      'KillWait=2',
      `NodeName=${node} NodeAddr=127.0.0.1 CPUs=${cpus} State=UNKNOWN`,
      'PartitionName=test Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES',
      ''
    ].join('\n'))
    daemons.push(spawn(bins.slurmctld, ['-D', '-i', '-f', conf], { env, stdio: 'ignore' }))
    daemons.push(spawn(bins.slurmd, ['-D', '-f', conf, '-N', node], { env, stdio: 'ignore' }))
    const until = Date.now() + readyMs
    for (;;) {
      const s = spawnSync(bins.sinfo, ['-h', '-o', '%T'], { env, encoding: 'utf8', timeout: 5000 })
      if ((s.stdout || '').trim() === 'idle') break
      for (const d of daemons) if (d.exitCode !== null) throw new Error(`a Slurm daemon exited with ${d.exitCode}`)
      if (Date.now() > until) throw new Error(`the node is not idle after ${readyMs} ms (sinfo: ${(s.stdout || s.stderr || '').trim()})`)
      await sleep(300)
    }
    return { dir, conf, env, node, stop, logs }
  } catch (err) {
    const text = logs()
    await stop()
    err.message += `\n${text}`
    throw err
  }
}

module.exports = { startCluster, stepdsOf }
