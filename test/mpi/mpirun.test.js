'use strict'
// `fastsock mpirun` (lib/cli/mpirun.ts) with real processes: env:// variables, output prefixed
// by rank (and --no-prefix), P = 1..5 ranks meeting through the store, a failing rank ending the
// job with its code, a rank killed by a signal, signals forwarded, --timeout, a command that
// cannot start, usage errors; and spawnRanks() with stdio 'pipe'.
const t = require('tap')
const path = require('path')
const { spawn } = require('child_process')
const { spawnRanks } = require('../../dist/cli/mpirun.js')

const ROOT = path.join(__dirname, '..', '..')
const CLI = path.join(ROOT, 'dist', 'cli', 'main.js')
const BOOT = path.join(ROOT, 'test', 'fixtures', 'mpi', 'launch-bootstrap.js')

// Launcher variables of an outer job must not reach the CLI under test.
const ENV = { ...process.env }
for (const k of Object.keys(ENV)) if (/^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|MASTER_ADDR|MASTER_PORT|OMPI_|PMI_|PMIX_|MPI_LOCAL|SLURM_)/.test(k)) delete ENV[k]

/** Runs `fastsock <args>`; resolves { code, signal, stdout, stderr, ms }. `onSpawn(child)` for signals. */
function cli (args, { timeoutMs = 30000, onSpawn } = {}) {
  return new Promise(resolve => {
    const t0 = Date.now()
    const child = spawn(process.execPath, [CLI, ...args], { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs)
    if (onSpawn) onSpawn(child)
    child.once('close', (code, signal) => { clearTimeout(timer); resolve({ code, signal, stdout, stderr, ms: Date.now() - t0 }) })
  })
}

const node = (...code) => ['node', '-e', code.join(';')]

/**
 * An onSpawn for cli(): sends `signal` to mpirun once its stdout has shown `n` "up" lines. They
 * prove readiness: mpirun installs its handlers before spawning the ranks, and a rank prints "up"
 * after installing its own. Exactly once: later chunks (the ranks' "usr1" lines) must not send it
 * again, because a repeat landing after the last rank exited, when mpirun has removed its
 * handlers, kills mpirun by the signal's default action instead of testing the forwarding.
 */
const signalWhenUp = (n, signal) => child => {
  let ups = 0
  let sent = false
  child.stdout.on('data', d => {
    ups += (String(d).match(/up/g) || []).length
    if (!sent && ups >= n) { sent = true; child.kill(signal) }
  })
}

t.test('env:// variables and [rank] prefixes', async t => {
  const r = await cli(['mpirun', '-n', '3', ...node(
    "const e = process.env; console.log(['RANK','WORLD_SIZE','LOCAL_RANK','LOCAL_WORLD_SIZE','MASTER_ADDR','MASTER_PORT'].map(k => k + '=' + e[k]).join(' '))",
    "console.error('to stderr'); process.stdout.write('no newline')")])
  t.equal(r.code, 0, r.stderr)
  const lines = r.stdout.trim().split('\n').sort()
  t.equal(lines.length, 6)
  const port = /MASTER_PORT=(\d+)/.exec(r.stdout)[1]
  for (let rank = 0; rank < 3; rank++) {
    t.ok(lines.includes(`[${rank}] RANK=${rank} WORLD_SIZE=3 LOCAL_RANK=${rank} LOCAL_WORLD_SIZE=3 MASTER_ADDR=127.0.0.1 MASTER_PORT=${port}`))
    t.ok(lines.includes(`[${rank}] no newline`), 'an unterminated last line is flushed with its prefix')
    t.match(r.stderr, `[${rank}] to stderr`)
  }
  const raw = await cli(['mpirun', '-n', '2', '--no-prefix', ...node('console.log("r" + process.env.RANK)')])
  t.equal(raw.code, 0)
  t.same(raw.stdout.trim().split('\n').sort(), ['r0', 'r1'])
})

for (const np of [1, 2, 3, 4, 5]) {
  t.test(`P = ${np}: the ranks bootstrap through rank 0's store`, async t => {
    const r = await cli(['mpirun', '-n', String(np), '--no-prefix', 'node', BOOT], { timeoutMs: 60000 })
    t.equal(r.code, 0, r.stderr + r.stdout)
    const outs = r.stdout.trim().split('\n').map(l => JSON.parse(l)).sort((a, b) => a.rank - b.rank)
    t.equal(outs.length, np)
    outs.forEach((o, i) => t.match(o, { rank: i, size: np, localRank: i, localSize: np, launcher: 'env', got: np === 1 ? null : `from ${(i + 1) % np}` }))
  })
}

t.test('a failing rank ends the job with its code, the others are killed', async t => {
  const r = await cli(['mpirun', '-n', '3', ...node("if (process.env.RANK === '1') setTimeout(() => process.exit(7), 200); else setTimeout(() => {}, 60000)")])
  t.equal(r.code, 7)
  t.ok(r.ms < 20000, `ended in ${r.ms} ms, not after the sleepers' minute`)
  t.match(r.stderr, /rank 1 exited with code 7/)
})

t.test('a rank ignoring SIGTERM is SIGKILLed after the grace period', async t => {
  const r = await cli(['mpirun', '-n', '2', ...node("process.on('SIGTERM', () => {})", "if (process.env.RANK === '0') setTimeout(() => process.exit(3), 200); else setInterval(() => {}, 1000)")])
  t.equal(r.code, 3)
  t.ok(r.ms < 15000)
})

t.test('a rank killed by a signal: 128 + n', async t => {
  const r = await cli(['mpirun', '-n', '2', ...node("if (process.env.RANK === '1') process.kill(process.pid, 'SIGKILL'); else setTimeout(() => {}, 60000)")])
  t.equal(r.code, 137)
  t.match(r.stderr, /rank 1 was killed by SIGKILL/)
})

t.test('signals are forwarded to every rank', async t => {
  const r = await cli(['mpirun', '-n', '3', ...node(
    "process.on('SIGUSR1', () => { console.log('usr1'); process.exit(0) })", "console.log('up')", 'setInterval(() => {}, 1000)')], { onSpawn: signalWhenUp(3, 'SIGUSR1') })
  t.equal(r.code, 0, r.stderr)
  t.equal((r.stdout.match(/usr1/g) || []).length, 3)
  const term = await cli(['mpirun', '-n', '2', ...node("console.log('up')", 'setInterval(() => {}, 1000)')], { onSpawn: signalWhenUp(2, 'SIGTERM') })
  t.equal(term.code, 143, 'ranks ended by the forwarded SIGTERM: 128 + 15')
})

t.test('--timeout kills the job: 124', async t => {
  const r = await cli(['mpirun', '-n', '2', '--timeout', '1', ...node('setInterval(() => {}, 1000)')])
  t.equal(r.code, 124)
  t.match(r.stderr, /timeout/)
})

t.test('a command that cannot start: 127', async t => {
  const r = await cli(['mpirun', '-n', '2', 'fastsock-no-such-command-xyz'])
  t.equal(r.code, 127)
  t.match(r.stderr, /cannot run fastsock-no-such-command-xyz: ENOENT/)
})

t.test('usage errors: 2', async t => {
  for (const args of [['mpirun', 'node', '-v'], ['mpirun', '-n', '0', 'node'], ['mpirun', '-n', 'x', 'node'], ['mpirun', '-n', '2'], ['mpirun', '-np', '2', 'node']]) {
    const r = await cli(args)
    t.equal(r.code, 2, args.join(' '))
  }
  const h = await cli(['mpirun', '--help'])
  t.equal(h.code, 0)
  t.match(h.stdout, /--np <N>/)
})

t.test("options after the command are the command's", async t => {
  const r = await cli(['mpirun', '-n', '1', '--', 'node', '-e', 'console.log(process.argv.slice(1).join(","))', '--', '-n', '9', '--no-prefix'])
  t.equal(r.code, 0, r.stderr)
  t.equal(r.stdout.trim(), '[0] -n,9,--no-prefix')
})

t.test('spawnRanks with stdio pipe and onLine', async t => {
  const lines = []
  const job = await spawnRanks({ np: 2, command: process.execPath, args: ['-e', 'console.log("out" + process.env.RANK); console.error("err")'], stdio: 'pipe', env: ENV, forwardSignals: false, onLine: (rank, stream, line) => lines.push(`${rank}:${stream}:${line}`) })
  t.equal(job.children.length, 2)
  t.ok(job.port > 0)
  const res = await job.done
  t.match(res, { code: 0, failedRank: null, timedOut: false })
  t.same(res.exits.map(e => e.code), [0, 0])
  t.same(lines.sort(), ['0:stderr:err', '0:stdout:out0', '1:stderr:err', '1:stdout:out1'])
  await t.rejects(spawnRanks({ np: 0, command: 'node' }), { code: 'ERR_OUT_OF_RANGE' })
})

t.test('stdout closed under mpirun (`| head -1`): the job stops quietly, status 141', async t => {
  // Each rank prints its pid, then output without end: only a stop ends the job.
  const child = spawn(process.execPath, [CLI, 'mpirun', '-n', '2', 'node', '-e',
    "console.log('pid ' + process.pid); setInterval(() => console.log('x'.repeat(200)), 1)"], { env: ENV, stdio: ['ignore', 'pipe', 'pipe'] })
  const killer = setTimeout(() => child.kill('SIGKILL'), 30000)
  let stderr = ''
  child.stderr.on('data', d => { stderr += d })
  const pids = []
  let seen = ''
  await new Promise(resolve => {
    const onData = d => {
      seen += d
      for (const m of seen.matchAll(/pid (\d+)/g)) if (!pids.includes(Number(m[1]))) pids.push(Number(m[1]))
      if (pids.length < 2) return
      child.stdout.off('data', onData)
      child.stdout.destroy() // the reader goes away, as head does after its line
      resolve()
    }
    child.stdout.on('data', onData)
  })
  const [code, signal] = await new Promise(resolve => child.once('close', (c, s) => resolve([c, s])))
  clearTimeout(killer)
  t.equal(signal, null, 'mpirun exited by itself')
  t.equal(code, 141, `128 + SIGPIPE\n${stderr}`)
  t.notMatch(stderr, /EPIPE|Error|^\s+at /m, 'no error, no stack trace')
  for (const pid of pids) t.throws(() => process.kill(pid, 0), { code: 'ESRCH' }, `rank pid ${pid} is gone`)
})
