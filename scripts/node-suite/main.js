#!/usr/bin/env node
'use strict'
/**
 * `npm run test:node-suite [-- options]`: Node's own test/parallel/test-{net,http,https}-* files
 * (from Debian's nodejs source package, see fetch.js), each run plain, with the preload on the
 * default chain, and with the preload and FASTSOCK_TRANSPORTS=unix,tcp (run.js). Prints the
 * differences (files that pass plain and fail or hang with the preload) as a table with the rungs
 * that carried each file's connections, the counts, and writes every result as JSON. A file that
 * fails or hangs with the preload runs again (--retries) and, failing every time, plain once more.
 * Exits 1 when a file regresses (passes plain, fails with the preload every time) that is not in
 * test/node-suite/out-of-scope.json or open-regressions.json (each entry names its reason), 2 when
 * the run itself failed. See docs/node-suite.md.
 */
const fs = require('fs')
const path = require('path')
const { Command } = require('commander')
const Table = require('cli-table3')
const { ensureTests } = require('./fetch')
const { runFile, CONFIGS, makeTestDir, parallelStatus } = require('./run')

const REPO = path.resolve(__dirname, '../..')
const OUT_OF_SCOPE = path.join(REPO, 'test/node-suite/out-of-scope.json')
// Regressions known and not fixed yet (issue 10 open), per configuration, each with its class and
// why: they do not fail the run, a new one does, and one that passes again is reported so the
// list only shrinks.
const OPEN = path.join(REPO, 'test/node-suite/open-regressions.json')
const FAST = r => r !== 'tcp' && r !== 'pipe' && r !== 'none'
/**
 * A file passes plain when its plain run passed (none this time and none cached: taken as
 * passing) and, when it was run plain again (main: a regression that never passed on a retry),
 * that run passed too.
 */
const passesPlain = r => (r.plain?.status ?? 'pass') === 'pass' && (r.plainAgain?.status ?? 'pass') === 'pass'
/** The file is in open-regressions.json for configuration `c`. */
const openFor = (r, c) => r.open !== null && r.open.configs.includes(c)
/** The file's failure in configuration `c` does not count (out of scope, or listed open for `c`). */
const listed = (r, c) => r.outOfScope !== null || openFor(r, c)
const LABEL = { plain: 'plain', default: 'default', unix: 'unix,tcp' }

const program = new Command()
  .name('node-suite')
  .description("Node's own net/http/https tests, plain and with the fastsock preload")
  .option('--filter <substrings>', 'only files whose name contains one of these (comma-separated), e.g. net-socket,http-agent')
  .option('--config <names>', 'configurations to run, comma-separated: plain, default, unix', 'plain,default,unix')
  .option('--jobs <n>', 'files run at a time', v => parseInt(v, 10), 2)
  .option('--timeout <s>', 'per-file timeout in seconds (a hang past it counts as "hang")', v => parseFloat(v), 30)
  .option('--retries <n>', 'runs again a file that failed or hung with the preload and passed plain, up to this many times; passing then marks it flaky. One still failing is run plain again: failing there too, it is not a regression', v => parseInt(v, 10), 2)
  .option('--json <file>', 'where to write the results (default: <cache>/results.json)')
  .option('--cache <dir>', 'cache directory (default: FASTSOCK_NODE_SUITE_CACHE, else node_modules/.cache/fastsock-node-suite)')
  .option('--tests-from <major>', "run the test files of this Node major (default: the running Node's; a newer Node runs 20's: docs/node-suite.md)", v => parseInt(v, 10))
  .option('--quiet', 'no per-run lines')
  .parse()

/** A pool of `jobs` slots: runs `task(item, slot)` for each item, at most `jobs` at a time. */
async function pool (items, jobs, task) {
  let next = 0
  const worker = async slot => { while (next < items.length) { const i = next++; await task(items[i], slot, i) } }
  await Promise.all(Array.from({ length: Math.min(jobs, items.length) }, (_, slot) => worker(slot)))
}

function rungText (rungs) {
  const names = Object.keys(rungs ?? {})
  return names.length ? names.map(r => `${r}:${rungs[r]}`).join(' ') : '-'
}

function cell (r) {
  if (!r) return ''
  if (r.status === 'pass') return r.flaky ? 'pass (flaky)' : 'pass'
  if (r.status === 'hang') return r.hang === 'killed' ? 'HANG' : `HANG ${r.hang}`
  return r.signal ? `FAIL ${r.signal}` : `FAIL ${r.code}`
}

async function main () {
  const opts = program.opts()
  const started = Date.now()
  const configs = opts.config.split(',').map(s => s.trim()).filter(Boolean)
  for (const c of configs) if (!CONFIGS[c]) throw new Error(`unknown configuration ${c} (plain, default, unix)`)
  const register = path.join(REPO, 'dist/register.js')
  if (configs.some(c => CONFIGS[c].preload) && !fs.existsSync(register)) throw new Error(`${register} is missing: npm run build:ts`)
  const cacheDir = path.resolve(opts.cache ?? process.env.FASTSOCK_NODE_SUITE_CACHE ?? path.join(REPO, 'node_modules/.cache/fastsock-node-suite'))
  const running = Number(process.versions.node.split('.')[0])
  const testsMajor = opts.testsFrom ?? running
  if (!Number.isInteger(testsMajor) || testsMajor < 20 || testsMajor > running) throw new Error(`--tests-from ${opts.testsFrom}: a Node major from 20 to the running one (${running})`)
  const { root, source } = await ensureTests(cacheDir, { major: testsMajor })
  const outOfScope = JSON.parse(fs.readFileSync(OUT_OF_SCOPE, 'utf8'))
  const open = fs.existsSync(OPEN) ? JSON.parse(fs.readFileSync(OPEN, 'utf8')) : {}
  const status = parallelStatus(path.join(root, 'test/parallel/parallel.status'))

  const filters = opts.filter ? opts.filter.split(',').map(s => s.trim()).filter(Boolean) : null
  const files = fs.readdirSync(path.join(root, 'test/parallel'))
    .filter(f => /^test-(net|http|https)-.*\.m?js$/.test(f))
    .filter(f => !filters || filters.some(s => f.includes(s)))
    .sort()
  console.error(`node-suite: Node ${process.versions.node} running the tests of Debian nodejs ${source.version} (${source.suite}), ${files.length} files x ${configs.join(', ')}, ${opts.jobs} at a time, ${opts.timeout} s timeout`)
  // test/common's leak check knows the globals of the Node the files came from: under a newer
  // one it fails every file on the globals added since (navigator, from 21 on). Node's own
  // switch turns that one check off; the files' other checks stand.
  const env = running > testsMajor ? { NODE_TEST_KNOWN_GLOBALS: '0' } : {}

  // Without a plain run this time, the plain results of the last full one stand in.
  const plainCache = path.join(cacheDir, `node-${testsMajor}`, `plain-${process.versions.node}.json`)
  const plainPrev = !configs.includes('plain') && fs.existsSync(plainCache) ? JSON.parse(fs.readFileSync(plainCache, 'utf8')) : null
  if (!configs.includes('plain')) console.error(plainPrev ? `node-suite: plain results from ${plainCache}` : 'node-suite: no plain results cached: every failure counts as a regression')

  const testDir = makeTestDir()
  const results = Object.fromEntries(files.map(f => [f, { file: f, nodeStatus: status[f.replace(/\.m?js$/, '')] ?? null, outOfScope: outOfScope[f] ?? null, open: open[f] ?? null }]))
  let serial = 0
  let done = 0
  const runOne = (file, config, slot) => runFile(path.join(root, 'test/parallel', file), config, {
    root, register, slot, serial: serial++, testDir, timeoutMs: opts.timeout * 1000, env
  })
  // Configuration-major: the same file never runs twice at once (a test on a fixed port).
  const jobs = configs.flatMap(c => files.map(f => [f, c]))
  try {
    await pool(jobs, opts.jobs, async ([file, config], slot) => {
      const r = await runOne(file, config, slot)
      results[file][config] = r
      done++
      if (!opts.quiet && r.status !== 'pass') console.error(`[${done}/${jobs.length}] ${LABEL[config]} ${file}: ${cell(r)} (${(r.durationMs / 1000).toFixed(1)} s)`)
      else if (!opts.quiet && done % 100 === 0) console.error(`[${done}/${jobs.length}] ${((Date.now() - started) / 1000).toFixed(0)} s`)
    })
    if (plainPrev) for (const f of files) if (plainPrev[f]) results[f].plain = plainPrev[f]
    // A regression (failed or hung with the preload, passed plain) gets opts.retries more runs:
    // passing once marks it flaky (a timing failure on a loaded machine), not a regression. One
    // that never passes is run plain again: failing there too, the failure is Node's own
    // flakiness (or this host's), not the preload's, and does not count either.
    const preloadConfigs = configs.filter(c => CONFIGS[c].preload)
    // Listed files are not run again: their failure does not count either way.
    const regressed = (f, c) => results[f][c].status !== 'pass' && passesPlain(results[f]) && !listed(results[f], c)
    const again = preloadConfigs.flatMap(c => files.filter(f => regressed(f, c)).map(f => [f, c]))
    for (let i = 0; i < opts.retries && again.length; i++) {
      if (!opts.quiet) console.error(`node-suite: running ${again.length} regression(s) again (retry ${i + 1} of ${opts.retries})`)
      const passed = new Set()
      await pool(again, opts.jobs, async ([file, config], slot) => {
        const r = await runOne(file, config, slot)
        if (r.status === 'pass') { results[file][config] = { ...r, flaky: results[file][config] }; passed.add(file + '\0' + config) }
      })
      again.splice(0, again.length, ...again.filter(([f, c]) => !passed.has(f + '\0' + c)))
    }
    const recheck = [...new Set(again.map(([f]) => f))]
    if (recheck.length) {
      if (!opts.quiet) console.error(`node-suite: running ${recheck.length} file(s) plain again`)
      await pool(recheck, opts.jobs, async (file, slot) => {
        const r = await runOne(file, 'plain', slot)
        results[file].plainAgain = r
      })
    }
  } finally {
    fs.rmSync(testDir, { recursive: true, force: true })
  }
  if (configs.includes('plain') && !filters) {
    fs.writeFileSync(plainCache, JSON.stringify(Object.fromEntries(files.map(f => [f, results[f].plain]))))
  }

  const summary = summarize(files, results, configs)
  const wallS = (Date.now() - started) / 1000
  printReport(files, results, configs, summary, wallS)
  const jsonFile = path.resolve(opts.json ?? path.join(cacheDir, running === testsMajor ? 'results.json' : `results-node${running}.json`))
  fs.writeFileSync(jsonFile, JSON.stringify({
    node: process.versions.node, source, configs, timeoutS: opts.timeout, jobs: opts.jobs, wallS, summary, files: results
  }, null, 1) + '\n')
  console.log(`results: ${jsonFile}`)
  return summary.regressionsInScope > 0 ? 1 : 0
}

/** The counts: per configuration passes, hangs, regressions (in and out of scope), fast-rung share. */
function summarize (files, results, configs) {
  const per = {}
  let regressionsInScope = 0
  for (const c of configs.concat(configs.includes('plain') ? [] : ['plain'])) {
    const rs = files.map(f => results[f][c]).filter(Boolean)
    if (!rs.length) continue
    const s = { ran: rs.length, pass: 0, fail: 0, hang: 0, flaky: 0, hangKinds: { 'no-exit': 0, stuck: 0, killed: 0 } }
    for (const r of rs) {
      s[r.status]++
      if (r.flaky) s.flaky++
      if (r.status === 'hang') s.hangKinds[r.hang]++
    }
    if (CONFIGS[c].preload) {
      const reg = files.filter(f => results[f][c] && results[f][c].status !== 'pass' && passesPlain(results[f]))
      const isOpen = f => openFor(results[f], c)
      s.failsPlainAgain = files.filter(f => results[f][c] && results[f][c].status !== 'pass' && results[f].plain?.status === 'pass' && !passesPlain(results[f]))
      s.regressions = reg.filter(f => !results[f].outOfScope && !isOpen(f))
      s.regressionsOpen = reg.filter(f => !results[f].outOfScope && isOpen(f))
      s.regressionsOutOfScope = reg.filter(f => results[f].outOfScope)
      s.openNowPassing = files.filter(f => isOpen(f) && results[f][c]?.status === 'pass')
      s.fixed = files.filter(f => results[f][c]?.status === 'pass' && results[f].plain && results[f].plain.status !== 'pass')
      regressionsInScope += s.regressions.length
      // Fast-rung share: of the files that pass with the preload and made a connection, those
      // with at least one connection over a rung other than TCP (or a UNIX path they named).
      const passing = files.filter(f => results[f][c]?.status === 'pass')
      const connected = passing.filter(f => Object.keys(results[f][c].rungs).some(r => r !== 'none'))
      const fast = connected.filter(f => Object.keys(results[f][c].rungs).some(FAST))
      s.passingConnected = connected.length
      s.passingFast = fast.length
      s.fastShareOfPassing = passing.length ? fast.length / passing.length : 0
      s.fastShareOfConnected = connected.length ? fast.length / connected.length : 0
    }
    per[c] = s
  }
  return { files: files.length, per, regressionsInScope }
}

function printReport (files, results, configs, summary, wallS) {
  const style = process.stdout.isTTY ? {} : { style: { head: [], border: [] } }
  const preload = configs.filter(c => CONFIGS[c].preload)
  const diff = files.filter(f => preload.some(c => results[f][c] && (results[f][c].status !== 'pass' || results[f][c].flaky) && results[f].plain?.status === 'pass'))
  const plainCell = r => r.plainAgain && r.plainAgain.status !== 'pass' ? `pass, then ${cell(r.plainAgain)}` : cell(r.plain)
  if (diff.length) {
    const t = new Table({ ...style, head: ['file', 'plain', ...preload.map(c => LABEL[c]), 'rungs (' + preload.map(c => LABEL[c]).join(' / ') + ')', 'out of scope'] })
    for (const f of diff) {
      t.push([f, plainCell(results[f]), ...preload.map(c => cell(results[f][c])),
        preload.map(c => rungText(results[f][c]?.rungs)).join(' / '), results[f].outOfScope ? 'yes' : ''])
    }
    console.log('Files that pass plain and not with the preload (or only on a retry):')
    console.log(t.toString())
  }
  const t = new Table({ ...style, head: ['', ...Object.keys(summary.per).map(c => LABEL[c])] })
  const row = (name, fn) => t.push([name, ...Object.keys(summary.per).map(c => fn(summary.per[c], c))])
  row('files run', s => s.ran)
  row('pass', s => s.pass)
  row('fail', s => s.fail)
  row('hang (no-exit / stuck / killed)', s => `${s.hang} (${s.hangKinds['no-exit']} / ${s.hangKinds.stuck} / ${s.hangKinds.killed})`)
  row('pass only on a retry (flaky)', s => s.flaky)
  row('fail with the preload, then plain too (Node\'s flakiness: not counted)', s => s.failsPlainAgain ? s.failsPlainAgain.length : '')
  row('new regressions (not listed)', s => s.regressions ? s.regressions.length : '')
  row('open regressions (listed, issue 10)', s => s.regressionsOpen ? s.regressionsOpen.length : '')
  row('regressions out of scope', s => s.regressionsOutOfScope ? s.regressionsOutOfScope.length : '')
  row('fail plain, pass here', s => s.fixed ? s.fixed.length : '')
  row('passing files on a fast rung', s => s.regressions ? `${s.passingFast} (${(100 * s.fastShareOfPassing).toFixed(1)}% of passing, ${(100 * s.fastShareOfConnected).toFixed(1)}% of those connecting)` : '')
  console.log(t.toString())
  console.log(`wall time: ${wallS.toFixed(0)} s`)
  for (const [c, s] of Object.entries(summary.per)) {
    for (const f of s.openNowPassing ?? []) console.log(`passes again on ${LABEL[c]}: ${f} (remove it from test/node-suite/open-regressions.json)`)
    for (const f of s.failsPlainAgain ?? []) console.log(`not counted on ${LABEL[c]}: ${f} (failed plain too when run again)`)
    for (const f of s.regressions ?? []) console.log(`new regression on ${LABEL[c]}: ${f}`)
  }
  const inScope = summary.regressionsInScope
  console.log(inScope ? `FAILED: ${inScope} regression(s) outside test/node-suite/out-of-scope.json and open-regressions.json` : 'OK: no regression outside test/node-suite/out-of-scope.json and open-regressions.json')
}

main().then(code => { process.exitCode = code }, err => {
  console.error(`node-suite: ${err.stack || err.message}`)
  process.exitCode = 2
})

