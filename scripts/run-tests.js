#!/usr/bin/env node
'use strict'
// Runs tap test files each as a plain `node <file>` (a tap test file is a TAP producer on its own)
// and reports like a tap runner: one line per file, the whole TAP output of a failing file, a
// summary, exit code 1 when any file failed. Used inside the RDMA guest (scripts/test-rdma-inner.sh)
// because its CPU is emulated: there the tap runner's own start-up and per-file loaders cost
// ~37 s of CPU for one file that runs in ~6 s on its own (measured: `npx tap <file>` 43 s,
// `node <file>` 5.8 s wall). On real CPUs use `npm test`.
//
// Usage: node scripts/run-tests.js [--jobs N] [--timeout S] <file or directory>...
// Directories are searched for *.test.js. Files run N at a time (default: the CPU count), each
// killed (and failed) after S seconds (default 600).
const { spawn } = require('child_process')
const fs = require('fs')
const os = require('os')
const path = require('path')
const { parseArgs } = require('util')

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { jobs: { type: 'string' }, timeout: { type: 'string' } }
})
const jobs = Math.max(1, Number(values.jobs) || os.availableParallelism())
const timeoutMs = (Number(values.timeout) || 600) * 1000

function testFiles (p) {
  if (!fs.statSync(p).isDirectory()) return [p]
  return fs.readdirSync(p, { withFileTypes: true })
    .flatMap(e => e.isDirectory() ? testFiles(path.join(p, e.name)) : e.name.endsWith('.test.js') ? [path.join(p, e.name)] : [])
    .sort()
}

/** Runs one file; resolves { file, ok, ms, output, counts }. */
function run (file) {
  const started = Date.now()
  return new Promise(resolve => {
    // TAP_TIMEOUT: tap's own per-file alarm when a file runs on its own (30 s by default).
    const env = { ...process.env, TAP_TIMEOUT: String(timeoutMs / 1000) }
    const child = spawn(process.execPath, [file], { stdio: ['ignore', 'pipe', 'pipe'], env })
    let output = ''
    child.stdout.on('data', d => { output += d })
    child.stderr.on('data', d => { output += d })
    let timedOut = false
    const timer = setTimeout(() => { timedOut = true; child.kill('SIGKILL') }, timeoutMs)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      // tap's own summary line of the file: # { total: N, pass: N, fail: N, skip: N }
      const m = /^# (\{ total: .*\})$/m.exec(output)
      const why = timedOut ? `killed after ${timeoutMs / 1000} s` : signal ? `signal ${signal}` : code !== 0 ? `exit code ${code}` : ''
      resolve({ file, ok: !why, why, ms: Date.now() - started, output, counts: m ? m[1] : '' })
    })
  })
}

async function main () {
  const files = positionals.flatMap(testFiles)
  if (files.length === 0) {
    console.error('run-tests: no test files given')
    process.exit(2)
  }
  console.log(`TAP version 14\n1..${files.length}`)
  const queue = files.slice()
  let n = 0
  let failed = 0
  const started = Date.now()
  const worker = async () => {
    for (let file; (file = queue.shift()) !== undefined;) {
      const r = await run(file)
      n++
      if (!r.ok) {
        failed++
        console.log(r.output.replace(/^/gm, '    '))
      }
      console.log(`${r.ok ? 'ok' : 'not ok'} ${n} - ${r.file} # time=${r.ms}ms${r.why ? ` (${r.why})` : ''} ${r.counts}`)
    }
  }
  await Promise.all(Array.from({ length: Math.min(jobs, files.length) }, worker))
  console.log(`# files: ${files.length}, failed: ${failed}, time: ${((Date.now() - started) / 1000).toFixed(1)} s`)
  process.exit(failed > 0 ? 1 : 0)
}

main()
