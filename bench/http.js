#!/usr/bin/env node
'use strict'
/**
 * An unmodified http server under load from autocannon, with and without the preload hook:
 * requests/s and p50/p99 latency for Node's net (TCP), shm, unix, and the fallback (hook on the
 * client only), medians of several runs, and the fallback overhead against plain net.
 *
 *   node bench/http.js [--rounds 5] [--duration 3] [--connections 10]
 */
const path = require('path')
const { run, parseArgs } = require('./_hook-bench')
const o = parseArgs({ rounds: 5, duration: 3, connections: 10 })
run({
  title: 'http (autocannon, GET, 11-byte body)',
  latencyNote: 'autocannon\'s, in whole ms',
  unit: 'req',
  serverScript: path.join(__dirname, '_http-server.js'),
  clientScript: path.join(__dirname, '_http-client.js'),
  ...o
}).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
