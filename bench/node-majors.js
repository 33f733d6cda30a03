#!/usr/bin/env node
'use strict'
/**
 * fastsock's ratios to Node's net on each tested Node major (docs/node-versions.md): for each
 * major, with its pinned binary (scripts/node-versions.json, fetched from the npm registry),
 * `fastsock pipe --quick` (RTT/2 of 64 B and 64 KiB over shm, unix and net:tcp, streaming MB/s at the
 * largest size it streams, 64 KiB) and bench/http.js (an unmodified http server under autocannon, 10 connections). Each
 * ratio is taken within one run of one binary, so the majors compare by ratio, not by absolute.
 *
 *   node bench/node-majors.js [--majors 20,22,24,26] [--http-rounds 3] [--http-duration 2]
 *
 * Prints one Markdown table; progress on stderr.
 */
const fs = require('fs')
const os = require('os')
const path = require('path')
const { execFileSync } = require('child_process')
const { parseArgs } = require('util')
const { ensureNode, pinOf, envFor } = require('../scripts/node-matrix')

const ROOT = path.join(__dirname, '..')
const { values } = parseArgs({ options: { majors: { type: 'string', default: '20,22,24,26' }, 'http-rounds': { type: 'string', default: '3' }, 'http-duration': { type: 'string', default: '2' } } })

/** Runs `node args` with the major's binary first in PATH; returns stdout. */
function runUnder (bin, args) {
  return execFileSync(path.join(bin, 'node'), args, { cwd: ROOT, env: envFor(bin), encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'], maxBuffer: 64 << 20 })
}

/** Median RTT/2 (µs) of `channel` at `bytes` in a pipe JSON document. */
function rtt (doc, channel, bytes) {
  const r = doc.pingpong.find(x => x.channel === channel && x.bytes === bytes)
  return r ? r.halfRttUs.median : NaN
}

/** Streaming MB/s of `channel` at the largest size measured. */
function stream (doc, channel) {
  const rows = doc.stream.filter(x => x.channel === channel)
  return rows.length ? rows.reduce((a, b) => (b.bytes > a.bytes ? b : a)).mbPerSec : NaN
}

/** The "× net" column of bench/http.js's table for `config`. */
function httpRatio (text, config) {
  const m = new RegExp(`^\\| ${config} \\| [^|]+ \\| (\\d+) \\| ([\\d.]+) \\|`, 'm').exec(text)
  return m ? { rps: Number(m[1]), ratio: Number(m[2]) } : { rps: NaN, ratio: NaN }
}

const f = (x, d = 2) => Number.isFinite(x) ? x.toFixed(d) : '-'

function main () {
  const rows = []
  for (const major of values.majors.split(',').map(Number)) {
    const bin = ensureNode(major)
    const version = pinOf(major).version
    process.stderr.write(`node-majors: Node ${version}: fastsock pipe --quick\n`)
    const json = path.join(os.tmpdir(), `fastsock-pipe-${process.pid}-${major}.json`)
    runUnder(bin, [path.join(ROOT, 'dist/cli/main.js'), 'pipe', '--quick', '--no-progress', '--json', json])
    const doc = JSON.parse(fs.readFileSync(json, 'utf8'))
    fs.rmSync(json, { force: true })
    process.stderr.write(`node-majors: Node ${version}: bench/http.js\n`)
    const http = runUnder(bin, [path.join(__dirname, 'http.js'), '--rounds', values['http-rounds'], '--duration', values['http-duration'], '--connections', '10'])
    const tcp64 = rtt(doc, 'net:tcp', 64)
    const tcp64k = rtt(doc, 'net:tcp', 65536)
    rows.push({
      version,
      shm64: rtt(doc, 'fastsock:shm', 64),
      tcp64,
      lat64: tcp64 / rtt(doc, 'fastsock:shm', 64),
      lat64k: tcp64k / rtt(doc, 'fastsock:shm', 65536),
      unix64: tcp64 / rtt(doc, 'fastsock:unix', 64),
      bw: stream(doc, 'fastsock:shm') / stream(doc, 'net:tcp'),
      httpShm: httpRatio(http, 'shm'),
      httpUnix: httpRatio(http, 'unix')
    })
  }
  const lines = [
    `fastsock against Node's net per Node major (fastsock pipe --quick; bench/http.js, 10 connections, median of ${values['http-rounds']} rounds of ${values['http-duration']} s), ratios within each run (> 1: fastsock faster)`,
    '',
    '| Node | shm 64 B RTT/2 µs | net:tcp 64 B RTT/2 µs | 64 B latency × net (shm / unix) | 64 KiB latency × net (shm) | stream bandwidth × net (shm, 64 KiB; --quick: noisy) | http req/s × net (shm / unix) |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: |'
  ]
  for (const r of rows) {
    lines.push(`| ${r.version} | ${f(r.shm64)} | ${f(r.tcp64, 1)} | ${f(r.lat64, 1)} / ${f(r.unix64, 1)} | ${f(r.lat64k, 1)} | ${f(r.bw)} | ${f(r.httpShm.ratio)} / ${f(r.httpUnix.ratio)} |`)
  }
  process.stdout.write(lines.join('\n') + '\n')
}

main()
