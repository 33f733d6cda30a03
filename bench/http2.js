#!/usr/bin/env node
'use strict'
/**
 * Unmodified http2 servers and client, with and without the preload hook: one session each over
 * h2c (http2.createServer, nghttp2 over the socket itself) and h2 over TLS (createSecureServer,
 * nghttp2 over TLSWrap): sequential requests (µs/request), 16 concurrent streams (requests/s),
 * 1 MiB bodies over h2c (MB/s). Configurations and table: bench/_wrapped-bench.js.
 *
 *   node bench/http2.js [--rounds 5] [--ms 1000] [--only preloaded,unix]   (~1.5 min)
 */
const path = require('path')
const { run, parseArgs } = require('./_wrapped-bench')
const o = parseArgs({ rounds: 5, ms: 1000 })
run({
  title: 'http2 (one session per server)',
  serverScript: path.join(__dirname, '_http2-server.js'),
  clientScript: path.join(__dirname, '_http2-client.js'),
  ...o
}).catch(err => { process.stderr.write(`${err.stack}\n`); process.exit(1) })
