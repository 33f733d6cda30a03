'use strict'
/**
 * Runs one of Node's test files as Node's own runner does (tools/test.py, test/testpy): `node
 * <flags of the file's "// Flags:" line> <file>` from the source root, with TEST_THREAD_ID /
 * TEST_SERIAL_ID / TEST_PARALLEL and NODE_TEST_DIR set, and a timeout. The test runs in its own
 * process group: on a timeout the whole group is killed and the run counts as a hang; once the
 * test exits, what it left behind in its group is killed too. exit-probe.js, preloaded, tells
 * the hangs apart: a test still alive 5 s before its timeout is made to exit, and Node's
 * test/common checks then say whether it had done all it should ('no-exit') or not ('stuck').
 */
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawn } = require('child_process')

/** tools/test.py's FLAGS_PATTERN: the first `// Flags:` line's flags, split on white space. */
const FLAGS_PATTERN = /\/\/\s+Flags:(.*)/

/** The flags a test file asks for (`// Flags: --expose-internals ...`), or []. */
function flagsOf (source) {
  const m = FLAGS_PATTERN.exec(source)
  return m ? m[1].trim().split(/\s+/).filter(Boolean) : []
}

const PROBE = path.join(__dirname, 'exit-probe.js')
/** The exit code exit-probe.js exits with (a test's own exit codes are small). */
const PROBE_CODE = 97
const PROBE_MARGIN_MS = 5000
const PROBE_MARK = '[node-suite: exit probe: still alive, exiting]'

/** What each configuration adds: the preload (or not) and FASTSOCK_TRANSPORTS. */
const CONFIGS = {
  plain: { preload: false, env: {} },
  default: { preload: true, env: {} },
  unix: { preload: true, env: { FASTSOCK_TRANSPORTS: 'unix,tcp' } }
}

/** The environment every run starts from: this one without NODE_OPTIONS and FASTSOCK_*. */
function baseEnv () {
  const env = {}
  for (const [k, v] of Object.entries(process.env)) {
    if (k === 'NODE_OPTIONS' || k.startsWith('FASTSOCK_') || k.startsWith('npm_')) continue
    env[k] = v
  }
  return env
}

/** Sums the transport log's lines (lib/register.ts logTransportsAtExit) per rung: `{ shm: 3 }`. */
function readTransportLog (file) {
  const rungs = {}
  let text
  try { text = fs.readFileSync(file, 'utf8') } catch { return rungs }
  for (const line of text.split('\n')) {
    if (!line) continue
    let rec
    try { rec = JSON.parse(line) } catch { continue }
    for (const side of [rec.client, rec.server]) {
      for (const [rung, n] of Object.entries(side ?? {})) rungs[rung] = (rungs[rung] ?? 0) + n
    }
  }
  return rungs
}

function killGroup (pid) {
  try { process.kill(-pid, 'SIGKILL') } catch {}
}

const TAIL_CHARS = 3000

/**
 * Runs `file` (absolute) once in configuration `config` (a CONFIGS key). `opts`: `{ root,
 * register, slot, serial, testDir, timeoutMs, env }` (`env`: variables every run gets; `register`: absolute path of dist/register.js;
 * `slot`: the pool slot, for TEST_THREAD_ID and a per-slot common.PORT). Resolves to `{ status:
 * 'pass'|'fail'|'hang', code, signal, durationMs, rungs, output }` (`output`: the end of stdout
 * and stderr, for runs that did not pass).
 */
function runFile (file, config, opts) {
  const cfg = CONFIGS[config]
  const flags = flagsOf(fs.readFileSync(file, 'utf8'))
  const args = [...flags, '-r', PROBE, ...(cfg.preload ? ['-r', opts.register] : []), file]
  const env = {
    ...baseEnv(),
    ...cfg.env,
    ...opts.env,
    TEST_THREAD_ID: String(opts.slot),
    TEST_SERIAL_ID: String(opts.serial),
    TEST_PARALLEL: '1',
    NODE_TEST_DIR: opts.testDir,
    NODE_COMMON_PORT: String(12346 + 100 * opts.slot),
    FASTSOCK_NODE_SUITE_PROBE_CODE: String(PROBE_CODE),
    FASTSOCK_NODE_SUITE_PROBE_MARK: PROBE_MARK,
    FASTSOCK_NODE_SUITE_PROBE_MS: String(opts.timeoutMs > 2 * PROBE_MARGIN_MS ? opts.timeoutMs - PROBE_MARGIN_MS : 0)
  }
  let log = null
  if (cfg.preload) {
    log = path.join(opts.testDir, `transports.${opts.serial}.jsonl`)
    fs.rmSync(log, { force: true })
    env.FASTSOCK_TRANSPORT_LOG = log
  }
  return new Promise(resolve => {
    const started = process.hrtime.bigint()
    const child = spawn(process.execPath, args, { cwd: opts.root, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] })
    let output = ''
    const collect = d => { output = (output + d.toString()).slice(-2 * TAIL_CHARS) }
    child.stdout.on('data', collect)
    child.stderr.on('data', collect)
    let hung = false
    const timer = setTimeout(() => { hung = true; killGroup(child.pid) }, opts.timeoutMs)
    let done = false
    const finish = (code, signal) => {
      if (done) return
      done = true
      clearTimeout(timer)
      const durationMs = Number(process.hrtime.bigint() - started) / 1e6
      const probed = !hung && output.includes(PROBE_MARK)
      const status = hung || probed ? 'hang' : code === 0 ? 'pass' : 'fail'
      // 'no-exit': the probe made it exit and test/common's checks passed; 'stuck': they failed;
      // 'killed': still alive at the timeout.
      const hang = hung ? 'killed' : probed ? (code === PROBE_CODE ? 'no-exit' : 'stuck') : undefined
      const rungs = log ? readTransportLog(log) : {}
      if (log) fs.rmSync(log, { force: true })
      fs.rmSync(path.join(opts.testDir, `.tmp.${opts.serial}`), { recursive: true, force: true })
      resolve({ status, hang, code, signal, durationMs: Math.round(durationMs), rungs, output: status === 'pass' ? '' : output.slice(-TAIL_CHARS) })
    }
    child.on('exit', (code, signal) => {
      killGroup(child.pid) // what the test left running
      // 'close' once the pipes are drained; a grandchild outside the group could hold them.
      const guard = setTimeout(() => finish(code, signal), 2000)
      child.once('close', () => { clearTimeout(guard); finish(code, signal) })
    })
    child.on('error', err => { output += String(err.stack); finish(null, null) })
  })
}

/** A scratch NODE_TEST_DIR, short enough for UNIX socket paths (common.PIPE lives in it). */
function makeTestDir () {
  return fs.mkdtempSync(path.join(os.tmpdir(), 'fsns-'))
}

/**
 * Node's test/parallel/parallel.status entries that apply on this system (sections `[true]`,
 * `$system==linux`, `$arch==<this arch>`): `{ 'test-x': 'PASS, FLAKY' | 'SKIP' }`.
 */
function parallelStatus (file) {
  const out = {}
  let text
  try { text = fs.readFileSync(file, 'utf8') } catch { return out }
  const arch = process.arch === 'x64' ? 'x64' : process.arch
  let applies = false
  for (const raw of text.split('\n')) {
    const line = raw.replace(/#.*/, '').trim()
    if (!line) continue
    const sec = /^\[(.*)\]$/.exec(line)
    if (sec) {
      applies = sec[1].split('||').some(alt => {
        const c = alt.trim()
        return c === 'true' || c === '$system==linux' || c === `$arch==${arch}`
      })
      continue
    }
    const m = /^(\S+)\s*:\s*(.+)$/.exec(line)
    if (applies && m) out[m[1]] = m[2].trim()
  }
  return out
}

module.exports = { runFile, flagsOf, CONFIGS, readTransportLog, makeTestDir, parallelStatus }
