#!/usr/bin/env node
'use strict'
/**
 * An unmodified ws echo server and ws clients (64-byte binary messages, one in flight per
 * connection), with and without the preload hook: messages/s and round-trip p50/p99 for Node's
 * net (TCP), shm, unix, and the fallback (hook on the client only), medians of several runs,
 * and the fallback overhead against plain net.
 *
 *   node bench/ws.js [--rounds 5] [--duration 3] [--connections 10]
 */
const path = require('path')
const { run, parseArgs } = require('./_hook-bench')
const o = parseArgs({ rounds: 5, duration: 3, connections: 10 })
run({
  title: 'ws echo (64-byte binary messages, one in flight per connection)',
  latencyNote: 'round trips the client timed',
  unit: 'msg',
  serverScript: path.join(__dirname, '_ws-server.js'),
  clientScript: path.join(__dirname, '_ws-client.js'),
  ...o
}).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
