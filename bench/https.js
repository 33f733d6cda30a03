#!/usr/bin/env node
'use strict'
/**
 * An unmodified https server and client (TLS 1.3, Node's TLSWrap over whatever socket the hook
 * gives it), with and without the preload hook: sequential GETs on one keep-alive connection
 * (µs/request) and 1 MiB bodies (MB/s). Configurations and table: bench/_wrapped-bench.js.
 *
 *   node bench/https.js [--rounds 5] [--ms 1500] [--only preloaded,unix]   (~1 min)
 */
const path = require('path')
const { run, parseArgs } = require('./_wrapped-bench')
const o = parseArgs({ rounds: 5, ms: 1500 })
run({
  title: 'https (TLS 1.3, one keep-alive connection)',
  serverScript: path.join(__dirname, '_https-server.js'),
  clientScript: path.join(__dirname, '_https-client.js'),
  ...o
}).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
