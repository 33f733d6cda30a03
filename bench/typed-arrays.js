#!/usr/bin/env node
'use strict'
/**
 * Typed arrays end to end (Uint8Array, Int32Array, Float64Array of 1 KiB, 64 KiB, 1 MiB) into
 * the receiving process's own typed array: fastsock `write(view)` + `readInto(view)` on each
 * available rung, against what a Node user does over `net` TCP today (JSON.stringify/parse,
 * v8.serialize/deserialize with a length prefix, hand-framed raw bytes). Prints µs per array,
 * MB/s and how many times faster each method is than JSON and than v8.serialize.
 *
 *   node bench/typed-arrays.js
 *   node bench/typed-arrays.js --typed-sizes 4KiB,4MiB
 */
require('./_run')(['--mode', 'typed', '--no-plot', '--no-nptcp'])
