'use strict'
// Starts the ranks of a fastsock/mpi job as real `node` processes, with env:// variables (as
// torch.distributed's launcher): RANK, WORLD_SIZE, LOCAL_RANK, LOCAL_WORLD_SIZE, MASTER_ADDR,
// MASTER_PORT. Used by test/mpi/*.test.js (p2p-* and coll-*).
//
//   const { spawnRanks } = require('../helpers/mpi-spawn')
//   const job = spawnRanks(path.join(__dirname, '..', 'fixtures', 'mpi', 'ring.js'), { np: 3 })
//   job.kill(1, 'SIGKILL')              // optional: kill one rank
//   const ranks = await job             // [{ rank, code, signal, stdout, stderr, timedOut }]
//
// The returned object is a Promise (resolves when every rank has exited, or after `timeoutMs`
// when all are SIGKILLed and the survivors get `timedOut: true`) with extra members:
// `children` (the ChildProcess of each rank), `kill(rank, signal = 'SIGKILL')`, `port`
// (MASTER_PORT), and `waitForOutput(rank, re, ms)` resolving when that rank's stdout matches `re`.
// MASTER_PORT is free when chosen, but a test file running beside may bind it before rank 0
// does: then rank 0 fails at once with "the store address ... is in use", every rank is killed
// and the entries get `portTaken: true` (runScenario starts the job again on another port).
const net = require('net')
const path = require('path')
const { spawn } = require('child_process')

/** What rank 0 prints when the store's port was taken between freePort() and its listen. */
const PORT_TAKEN = /the store address \S+ is in use/

/** A TCP port free on 127.0.0.1 now (listen on 0, read it, close). */
function freePort () {
  return new Promise((resolve, reject) => {
    const s = net.createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address()
      s.close(() => resolve(port))
    })
  })
}

/**
 * Spawns `np` ranks of `script` (`node script ...args`).
 * Options: `np` (default 2), `env` (extra variables for every rank; a function `rank => env`
 * for per-rank ones), `args` (argv after the script), `timeoutMs` (default 30000: then every
 * rank still alive is SIGKILLed), `localSize` (LOCAL_WORLD_SIZE; default np, one host),
 * `execArgv` (node flags).
 * Resolves with one entry per rank, in rank order:
 * `{ rank, code: number|null, signal: string|null, stdout: string, stderr: string, timedOut }`.
 */
function spawnRanks (script, opts = {}) {
  const np = opts.np ?? 2
  const timeoutMs = opts.timeoutMs ?? 30000
  const localSize = opts.localSize ?? np
  const children = []
  const results = []
  let timer
  let resolveOutputWaiters = () => {}
  const outputWaiters = []
  const job = (async () => {
    const port = opts.port ?? await freePort()
    await null // `job` is assigned once this function first yields (opts.port: no await above)
    job.port = port
    const exits = []
    for (let rank = 0; rank < np; rank++) {
      const extra = typeof opts.env === 'function' ? opts.env(rank) : opts.env
      const env = {
        ...process.env,
        RANK: String(rank),
        WORLD_SIZE: String(np),
        LOCAL_RANK: String(rank % localSize),
        LOCAL_WORLD_SIZE: String(localSize),
        MASTER_ADDR: '127.0.0.1',
        MASTER_PORT: String(port),
        ...extra
      }
      const child = spawn(process.execPath, [...(opts.execArgv ?? []), path.resolve(script), ...(opts.args ?? [])], {
        env, stdio: ['ignore', 'pipe', 'pipe']
      })
      const r = { rank, code: null, signal: null, stdout: '', stderr: '', timedOut: false }
      results.push(r)
      children.push(child)
      child.stdout.setEncoding('utf8')
      child.stderr.setEncoding('utf8')
      child.stdout.on('data', d => { r.stdout += d; resolveOutputWaiters() })
      child.stderr.on('data', d => {
        r.stderr += d
        if (!PORT_TAKEN.test(r.stderr)) return
        for (const res of results) res.portTaken = true
        for (const c of children) c.kill('SIGKILL')
      })
      exits.push(new Promise(resolve => {
        child.once('error', err => { r.stderr += `\nspawn error: ${err.message}`; resolve() })
        child.once('close', (code, signal) => { r.code = code; r.signal = signal; resolve() })
      }))
    }
    timer = setTimeout(() => {
      for (let i = 0; i < children.length; i++) {
        if (results[i].code === null && results[i].signal === null) {
          results[i].timedOut = true
          children[i].kill('SIGKILL')
        }
      }
    }, timeoutMs)
    await Promise.all(exits)
    clearTimeout(timer)
    return results
  })()
  resolveOutputWaiters = () => {
    for (let i = outputWaiters.length - 1; i >= 0; i--) {
      const w = outputWaiters[i]
      if (results[w.rank] && w.re.test(results[w.rank].stdout)) { outputWaiters.splice(i, 1); clearTimeout(w.timer); w.resolve(results[w.rank].stdout) }
    }
  }
  job.children = children
  /** Sends `signal` (default SIGKILL) to rank `rank`; false when it is not running. */
  job.kill = (rank, signal = 'SIGKILL') => children[rank] ? children[rank].kill(signal) : false
  /** Resolves with rank's stdout once it matches `re`; rejects after `ms`. */
  job.waitForOutput = (rank, re, ms = 10000) => new Promise((resolve, reject) => {
    const w = { rank, re, resolve, timer: null }
    w.timer = setTimeout(() => {
      const i = outputWaiters.indexOf(w)
      if (i >= 0) outputWaiters.splice(i, 1)
      reject(new Error(`timed out after ${ms} ms waiting for rank ${rank} to print ${re}`))
    }, ms)
    outputWaiters.push(w)
    resolveOutputWaiters()
  })
  return job
}

/** A one-line summary of the ranks' outcome, for assertion messages. */
function describe (results) {
  return results.map(r => `rank ${r.rank}: code=${r.code} signal=${r.signal}${r.timedOut ? ' TIMEOUT' : ''}\n  stdout: ${r.stdout.trim().slice(-600)}\n  stderr: ${r.stderr.trim().slice(-1500)}`).join('\n')
}

/**
 * Runs a fixture `scenario` on `np` ranks (`env` added, `timeoutMs` for the whole job) and asserts
 * on `t` that every rank exited 0 having printed "ok <rank>" (the ranks' output when not).
 * Resolves with the ranks' results.
 */
async function runScenario (t, fixture, scenario, np, { env = {}, timeoutMs = 30000 } = {}) {
  let ranks = await spawnRanks(fixture, { np, args: [scenario], env, timeoutMs })
  for (let retry = 0; retry < 3 && ranks.some(r => r.portTaken); retry++) {
    t.comment(`${scenario} on ${np} rank(s): the store's port was taken by another test before rank 0 listened; again on another port`)
    ranks = await spawnRanks(fixture, { np, args: [scenario], env, timeoutMs })
  }
  const bad = ranks.filter(r => r.code !== 0 || !new RegExp(`^ok ${r.rank}\\b`, 'm').test(r.stdout))
  t.same(bad.map(r => r.rank), [], `${scenario} on ${np} rank(s): every rank ok${bad.length ? '\n' + describe(ranks) : ''}`)
  return ranks
}

module.exports = { spawnRanks, freePort, describe, runScenario }
