'use strict'
// Helpers for the tests that start ranks through real launchers (Open MPI's mpirun, MPICH's
// mpiexec, Slurm's srun, network namespaces): find a binary (skip with the reason when it is
// absent, fail instead when CI=true: CI installs them with scripts/ci-mpi-deps.sh), run a
// command and parse the JSON lines its ranks print, and an environment without the variables of
// a launcher around the test.
const fs = require('fs')
const path = require('path')
const { spawn, spawnSync } = require('child_process')

const ROOT = path.join(__dirname, '..', '..')
const FIXTURES = path.join(ROOT, 'test', 'fixtures', 'mpi')
const IS_ROOT = typeof process.getuid === 'function' && process.getuid() === 0
const IN_CI = process.env.CI === 'true'

/** Absolute path of `bin` on PATH (or in the sbin directories), or null. */
function which (bin) {
  const dirs = (process.env.PATH || '').split(':').concat(['/usr/sbin', '/sbin', '/usr/local/sbin'])
  for (const d of dirs) {
    const p = path.join(d, bin)
    try {
      fs.accessSync(p, fs.constants.X_OK)
      return p
    } catch {}
  }
  return null
}

/**
 * Resolves the binaries or decides to skip: returns { paths } when all are present; otherwise
 * returns { skip: reason } — and when CI=true, fails `t` instead (absence is a CI defect).
 */
function need (t, bins, why = '') {
  const paths = {}
  const missing = []
  for (const b of bins) {
    const p = which(b)
    if (p === null) missing.push(b)
    else paths[b] = p
  }
  if (missing.length === 0) return { paths }
  const reason = `${missing.join(', ')} not installed${why ? ` (${why})` : ''}; scripts/ci-mpi-deps.sh installs it`
  if (IN_CI) {
    t.fail(`CI=true but ${reason}`)
    return { skip: reason, failed: true }
  }
  return { skip: reason }
}

/** process.env without any launcher's variables (RANK, OMPI_*, PMI_*, SLURM_*...). */
function cleanEnv (extra = {}) {
  const env = { ...process.env }
  for (const k of Object.keys(env)) {
    if (/^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|OMPI_|PMI_|PMIX_|MPI_LOCAL|SLURM_|FASTSOCK_MPI_JOB_ID)/.test(k)) delete env[k]
  }
  return { ...env, ...extra }
}

/**
 * Runs `cmd args`; resolves { code, signal, stdout, stderr, json, ms } where json holds every
 * stdout line that parses as a JSON object (others are ignored: launchers print banners). Kills
 * the process group after `timeoutMs`.
 */
function run (cmd, args, { env = cleanEnv(), timeoutMs = 60000, cwd } = {}) {
  return new Promise(resolve => {
    const t0 = Date.now()
    const child = spawn(cmd, args, { env, cwd, stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    let timedOut = false
    const timer = setTimeout(() => {
      timedOut = true
      try { process.kill(-child.pid, 'SIGKILL') } catch {}
    }, timeoutMs)
    child.once('error', err => { stderr += String(err) })
    child.once('close', (code, signal) => {
      clearTimeout(timer)
      const json = []
      for (const line of stdout.split('\n')) {
        const s = line.replace(/^\[\d+\] /, '').trim()
        if (!s.startsWith('{')) continue
        try { json.push(JSON.parse(s)) } catch {}
      }
      resolve({ code, signal, stdout, stderr, json, timedOut, ms: Date.now() - t0 })
    })
  })
}

/** Runs a command synchronously; its trimmed stdout, or null when it fails. */
function capture (cmd, args) {
  const r = spawnSync(cmd, args, { encoding: 'utf8' })
  return r.status === 0 ? r.stdout.trim() : null
}

/** The rank outputs of `json` sorted by rank, errors and all. */
function byRank (json) {
  return json.filter(o => typeof o.rank === 'number').sort((a, b) => a.rank - b.rank)
}

module.exports = { ROOT, FIXTURES, IS_ROOT, IN_CI, which, need, cleanEnv, run, capture, byRank }
