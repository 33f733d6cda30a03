'use strict'
/**
 * The process plumbing of the two-process benches (bench/_hook-bench.js for http/ws,
 * bench/_wrapped-bench.js for https/http2/gRPC): an unmodified server or client script in its own
 * process, with or without the preload hook (dist/register.js via NODE_OPTIONS, as `fastsock run`
 * does), reporting one JSON line on stdout; the median; the `--name <n>` argument parser.
 */
const { spawn } = require('child_process')
const path = require('path')
const fs = require('fs')

const ROOT = path.join(__dirname, '..')
const REGISTER = path.join(ROOT, 'dist', 'register.js')
if (!fs.existsSync(REGISTER)) {
  process.stderr.write(`${REGISTER} is missing: build first (npm run build:ts)\n`)
  process.exit(1)
}

/**
 * The environment of a bench process: this one's, plus `extra`; the hook (and `extraRequire`, an
 * absolute path preloaded after it) in NODE_OPTIONS; FASTSOCK_TRANSPORTS only when `extra` sets it.
 */
function envFor (hook, extra, extraRequire) {
  const env = { ...process.env, ...extra }
  delete env.FASTSOCK_DEBUG
  delete env.BENCH_CONFIGS
  if (!extra.FASTSOCK_TRANSPORTS) delete env.FASTSOCK_TRANSPORTS
  env.NODE_OPTIONS = (hook ? `--require "${REGISTER}"` : '') + (extraRequire ? ` --require "${extraRequire}"` : '')
  return env
}

/**
 * Spawns `node script args` (hook on or off, `extraEnv`, `extraRequire`) and resolves with
 * { child, msg }: msg is its first stdout line, parsed as JSON. Rejects when it exits first, or
 * prints nothing within `timeoutMs` (default 120 s; the child is then killed). `cpus` (a taskset
 * CPU list such as '1' or '0,1'): the process and every thread it starts run only there.
 */
function start (script, args, hook, extraEnv, extraRequire, timeoutMs = 120000, cpus) {
  return new Promise((resolve, reject) => {
    const argv = [process.execPath, script, ...args]
    const [file, ...rest] = cpus === undefined ? argv : ['taskset', '-c', cpus, ...argv]
    const child = spawn(file, rest, { env: envFor(hook, extraEnv, extraRequire), stdio: ['ignore', 'pipe', 'inherit'] })
    let out = ''
    const timer = setTimeout(() => { child.kill('SIGKILL'); reject(new Error(`${path.basename(script)}: no output in ${timeoutMs / 1000} s`)) }, timeoutMs)
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', d => {
      out += d
      const nl = out.indexOf('\n')
      if (nl >= 0) {
        clearTimeout(timer)
        try { resolve({ child, msg: JSON.parse(out.slice(0, nl)) }) } catch (e) { reject(e) }
      }
    })
    child.once('exit', code => { clearTimeout(timer); reject(new Error(`${path.basename(script)} exited (${code}) before reporting`)) })
    child.once('error', err => { clearTimeout(timer); reject(err) })
  })
}

/** SIGTERMs `child` (if still running) and resolves once it has exited. */
function stop (child) {
  return new Promise(resolve => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    child.removeAllListeners('exit')
    child.once('exit', resolve)
    child.kill('SIGTERM')
  })
}

/** The median of an array of numbers (the mean of the middle two for an even count). */
const median = xs => { const v = [...xs].sort((a, b) => a - b); const m = v.length >> 1; return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2 }

/**
 * Parses `--<name> <number>` for every name in `defaults` (returned merged over them), `--help`
 * (prints the options and exits); with `configs`, also `--only <name,...>` (as `only`).
 */
function parseArgs (defaults, configs = null) {
  const o = { ...defaults }
  const a = process.argv.slice(2)
  for (let i = 0; i < a.length; i++) {
    const k = a[i].replace(/^--/, '')
    if (configs && k === 'only') o.only = a[++i].split(',')
    else if (k in o) o[k] = Number(a[++i])
    else if (a[i] === '--help') {
      const only = configs ? `, --only <config,...> (${configs.map(c => c.name).join(', ')})` : ''
      process.stdout.write(`options: ${Object.keys(o).map(k => `--${k} <n> (default ${o[k]})`).join(', ')}${only}\n`)
      process.exit(0)
    } else throw new Error(`unknown option ${a[i]}`)
  }
  return o
}

module.exports = { envFor, start, stop, median, parseArgs }
