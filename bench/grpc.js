#!/usr/bin/env node
'use strict'
/**
 * An unmodified @grpc/grpc-js server and client (insecure channel: h2c, nghttp2 over the socket),
 * with and without the preload hook: unary 100 B calls on one channel (calls/s), server streaming
 * of 16 KiB messages (MB/s), bidi streaming of 1 KiB messages with 64 in flight (msg/s).
 * Configurations and table: bench/_wrapped-bench.js. Needs the dev dependency @grpc/grpc-js.
 *
 *   node bench/grpc.js [--rounds 5] [--ms 1000] [--only preloaded,unix]   (~1.5 min)
 */
const path = require('path')
const { run, parseArgs } = require('./_wrapped-bench')
const o = parseArgs({ rounds: 5, ms: 1000 })
run({
  title: 'gRPC (@grpc/grpc-js, one insecure channel)',
  serverScript: path.join(__dirname, '_grpc-server.js'),
  clientScript: path.join(__dirname, '_grpc-client.js'),
  ...o
}).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
