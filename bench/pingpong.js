#!/usr/bin/env node
'use strict'
/**
 * Ping-pong latency and bandwidth between two processes, NetPIPE-style: half round-trip latency
 * RTT/2 (µs: median, sextile, p99), bandwidth n/(RTT/2) (MB/s, MB = 10^6 bytes; Gbit/s), CPU time
 * per message and the ts/tb fit, for every available fastsock rung and the Node net baselines,
 * beside the native limits (memcpy, busy-poll floor, NPtcp when installed).
 *
 *   node bench/pingpong.js                        # 1 B .. 4 MiB
 *   node bench/pingpong.js --perturbations        # also n-3 and n+3 (NetPIPE)
 *   node bench/pingpong.js --plot pingpong.svg    # and write the plot
 *
 * Any `fastsock pipe` flag may follow (see `node dist/cli/main.js pipe --help`).
 */
require('./_run')(['--mode', 'pingpong', '--no-plot'])
