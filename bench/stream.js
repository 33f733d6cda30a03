#!/usr/bin/env node
'use strict'
/**
 * Streaming one-way bandwidth between two processes: the sender keeps the pipe full with n-byte
 * writes (honouring 'drain'), the receiver counts bytes and acks. Prints MB/s (MB = 10^6 bytes)
 * and CPU µs per write for every available fastsock rung and the Node net baselines, with the
 * memcpy bandwidth of the same size beside it.
 *
 *   node bench/stream.js
 *   node bench/stream.js --stream-ms 500 --transports unix,net-unix
 */
require('./_run')(['--mode', 'stream', '--no-plot', '--no-nptcp'])
