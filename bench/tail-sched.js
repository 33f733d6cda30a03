#!/usr/bin/env node
'use strict'
/**
 * Where the slowest round trips or requests of a workload went, from the kernel's scheduler
 * (docs/polling.md, "Where the 64 KiB and http tails go"): runs the workload under
 * `perf sched record` (CLOCK_MONOTONIC timestamps, the clock of process.hrtime), then, for each
 * of the slowest events the workload logged, reads what every Node main thread and every CPU did
 * during it.
 *
 *   node bench/tail-sched.js [--top 20] [--keep dir] -- <workload command>
 *
 * Workloads that log their slow events (FASTSOCK_TAIL_LOG: a directory; each process of the
 * workload that times something writes <pid>.json there: { pid, events: [[startNs, endNs], ...] },
 * its slowest events, monotonic ns):
 *   node bench/tail-causes.js --client <bytes> <round trips> fastsock|net    a ping-pong (tail-causes.js)
 *   node bench/http-latency.js --quick --loads 25 --connections 1           the open-loop http client
 *     (bench/_http-latency-client.js: a request's event runs from its due time to its response)
 *   node bench/mpi-exchange-tails.js --runs 1 --impls fastsock   CG's pattern (every rank: its 20 slowest 8 B sums)
 *   node bench/mpi-waits.js --np 4 --patterns allreduce-sync-osu --bytes 65536 --channels shm
 *     (every rank of the shm jobs: its 20 slowest timed calls)
 *
 * Each event is put in one class, from the sched_switch events (the thread switched out, its
 * state: R = preempted while runnable, S/D = asleep):
 *   preempted   a Node main thread (thread id = process id) was runnable but off its CPU for most
 *               of the event; "by" names what ran on that CPU meanwhile, grouped: a worker thread
 *               of a Node process (V8's platform workers, libuv's pool; "node" in Node 20), another
 *               Node main thread, a kernel thread, anything else by name; and how long another
 *               CPU sat idle meanwhile (the kernel could have run the thread there)
 *   running     a Node main thread ran for most of the event (its own work: JavaScript, a garbage
 *               collection pause, a copy)
 *   asleep      neither: the main threads slept for most of it (a wake-up that came late)
 * Prints the classes' counts and one line per event (duration, class, detail, and for every Node
 * main thread that ran or waited during it: time running, runnable off CPU, asleep). Needs perf (Debian:
 * linux-perf) and the rights to record sched tracepoints (root, or perf_event_paranoid ≤ -1).
 * Asserts nothing.
 */
const fs = require('fs')
const os = require('os')
const path = require('path')
const { spawnSync } = require('child_process')
const { parseArgs } = require('util')

function main () {
  const dash = process.argv.indexOf('--')
  if (dash < 0 || dash === process.argv.length - 1) usage('give the workload after --')
  const { values } = parseArgs({ args: process.argv.slice(2, dash), options: { top: { type: 'string', default: '20' }, keep: { type: 'string' } } })
  const top = Number(values.top)
  if (!(top > 0)) usage(`--top: ${values.top} is not a positive number`)
  const cmd = process.argv.slice(dash + 1)
  if (spawnSync('perf', ['--version']).status !== 0) usage('perf is not installed (Debian: apt-get install linux-perf)')
  const dir = values.keep ?? fs.mkdtempSync(path.join(os.tmpdir(), 'fastsock-tail-sched-'))
  fs.mkdirSync(path.join(dir, 'log'), { recursive: true })
  const data = path.join(dir, 'sched.data')
  try {
    const rec = spawnSync('perf', ['sched', 'record', '-k', 'mono', '-o', data, '--', ...cmd], { stdio: ['ignore', 'inherit', 'pipe'], env: { ...process.env, FASTSOCK_TAIL_LOG: path.join(dir, 'log') } })
    if (rec.status !== 0) throw new Error(`perf sched record -- ${cmd.join(' ')} exited ${rec.status}: ${String(rec.stderr).trim().split('\n').slice(-3).join(' ')}`)
    const script = spawnSync('perf', ['script', '-i', data, '-F', 'comm,pid,tid,cpu,time,event,trace'], { maxBuffer: 1 << 30, encoding: 'utf8' })
    if (script.status !== 0) throw new Error(`perf script: ${script.stderr}`)
    const sched = parseSwitches(script.stdout)
    const logs = fs.readdirSync(path.join(dir, 'log')).map(f => JSON.parse(fs.readFileSync(path.join(dir, 'log', f), 'utf8')))
    if (logs.length === 0) throw new Error('the workload logged no events: is it one that writes FASTSOCK_TAIL_LOG (see the header)?')
    for (const log of logs) report(log, sched, top)
  } finally {
    if (values.keep === undefined) fs.rmSync(dir, { recursive: true, force: true })
  }
}

function usage (why) {
  process.stderr.write(`tail-sched: ${why}\nusage: node bench/tail-sched.js [--top 20] [--keep dir] -- <workload command>\n`)
  process.exit(2)
}

const SWITCH = /^\s*(.+?)\s+(\d+)\/(\d+)\s+\[(\d+)\]\s+([\d.]+):\s+sched:sched_switch:.*prev_pid=(\d+) prev_prio=\d+ prev_state=(\S+) ==> next_comm=(.*?) next_pid=(\d+)/

/**
 * From perf script's sched_switch lines: per CPU the intervals each thread ran ([start, end] s,
 * tid), per thread the intervals it was runnable but switched out, thread → process, names.
 */
function parseSwitches (text) {
  const runs = new Map() // cpu -> [[start, end, tid]]
  const preempted = new Map() // tid -> [[start, end, cpu]]
  const since = new Map() // cpu -> [tid, start]
  const outAt = new Map() // tid -> [time, cpu] of a switch-out while runnable
  const pidOf = new Map(); const nameOf = new Map()
  for (const line of text.split('\n')) {
    const m = SWITCH.exec(line)
    if (m === null) continue
    const [, comm, pid, tid, cpuS, timeS, prev, state, nextComm, nextS] = m
    const cpu = Number(cpuS); const t = Number(timeS); const next = Number(nextS)
    pidOf.set(Number(tid), Number(pid)); nameOf.set(Number(tid), comm.trim()); nameOf.set(next, nameOf.get(next) ?? nextComm)
    const cur = since.get(cpu)
    if (cur !== undefined) push(runs, cpu, [cur[1], t, Number(prev)])
    since.set(cpu, [next, t])
    if (state.startsWith('R')) outAt.set(Number(prev), [t, cpu])
    const o = outAt.get(next)
    if (o !== undefined) { push(preempted, next, [o[0], t, o[1]]); outAt.delete(next) }
  }
  return { runs, preempted, pidOf, nameOf }
}

function push (map, key, v) { const a = map.get(key); if (a === undefined) map.set(key, [v]); else a.push(v) }
const overlap = (a, b, s, e) => Math.max(0, Math.min(b, e) - Math.max(a, s))

/** Node's main threads in the trace: thread id = process id, named node (or as node names them). */
function mainThreads (sched) {
  const mains = []
  for (const [tid, pid] of sched.pidOf) if (tid === pid && /^node|^MainThread/.test(sched.nameOf.get(tid) ?? '')) mains.push(tid)
  return mains
}

/** What thread `tid` is, for a report: "worker of <role>", "main of <role>", or its name. */
function describe (sched, tid, roleOf) {
  if (tid === 0) return 'idle'
  const pid = sched.pidOf.get(tid)
  const role = pid === undefined ? undefined : roleOf(pid)
  if (role !== undefined) return tid === pid ? `main thread of ${role}` : `a worker thread of ${role}`
  const name = sched.nameOf.get(tid) ?? String(tid)
  return /^(kworker|rcu_|ksoftirqd|migration|kdamond|kcompactd|kswapd)/.test(name) ? `kernel: ${name.replace(/\/.*$/, '').replace(/[:-]\d.*$/, '')}` : name
}

/** Per Node main thread that ran or waited for a CPU during [a, b]: time running, runnable off CPU, and the rest (asleep). */
function states (sched, mains, roleOf, a, b) {
  return mains.map(tid => {
    let ran = 0; let waited = 0
    for (const list of sched.runs.values()) for (const [s, e, t] of list) if (t === tid) ran += overlap(a, b, s, e)
    for (const [s, e] of sched.preempted.get(tid) ?? []) waited += overlap(a, b, s, e)
    return { tid, ran, waited, slept: Math.max(0, b - a - ran - waited) }
  }).filter(x => x.ran + x.waited > (b - a) / 20) // the ones that ran or waited (others slept throughout)
    .map(x => `${describe(sched, x.tid, roleOf).replace('main thread of ', '')}: ran ${us(x.ran)}, runnable ${us(x.waited)}, asleep ${us(x.slept)}`).join('; ')
}

function classify (sched, mains, roleOf, a, b) {
  const dur = b - a
  let best = null
  for (const tid of mains) {
    for (const [s, e, cpu] of sched.preempted.get(tid) ?? []) {
      const o = overlap(a, b, s, e)
      if (o > 0 && (best === null || o > best.o)) best = { o, tid, cpu, s: Math.max(a, s), e: Math.min(b, e) }
    }
  }
  if (best !== null && best.o > dur / 2) {
    const by = new Map()
    for (const [s, e, tid] of sched.runs.get(best.cpu) ?? []) {
      const o = overlap(best.s, best.e, s, e)
      if (o > 0 && tid !== best.tid) { const d = describe(sched, tid, roleOf); by.set(d, (by.get(d) ?? 0) + o) }
    }
    const who = [...by].sort((x, y) => y[1] - x[1])
    // meanwhile, how long another CPU sat idle (the thread could have run there)
    let idle = 0
    for (const [cpu, list] of sched.runs) if (cpu !== best.cpu) for (const [s, e, tid] of list) if (tid === 0) idle += overlap(best.s, best.e, s, e)
    return { cls: 'preempted', who: who[0]?.[0] ?? '?', idle, wait: best.o, detail: `${describe(sched, best.tid, roleOf)} runnable off CPU ${best.cpu} for ${us(best.o)} (another CPU idle ${us(idle)} of it); ran there: ${who.slice(0, 3).map(([d, o]) => `${d} ${us(o)}`).join(', ')}` }
  }
  let run = null
  for (const tid of mains) {
    let o = 0
    for (const list of sched.runs.values()) for (const [s, e, t] of list) if (t === tid) o += overlap(a, b, s, e)
    if (run === null || o > run.o) run = { o, tid }
  }
  if (run !== null && run.o > dur / 2) return { cls: 'running', who: describe(sched, run.tid, roleOf), detail: `${describe(sched, run.tid, roleOf)} ran ${us(run.o)}` }
  return { cls: 'asleep', who: '-', detail: `the main threads mostly asleep (longest running: ${run === null ? 0 : us(run.o)})` }
}

function us (s) { return `${Math.round(s * 1e6).toLocaleString('en-US')} µs` }

function report (log, sched, top) {
  const mains = mainThreads(sched)
  // the logging process is "the timer"; any other Node process (its peer, a bench's parent) by pid
  const roleOf = (pid) => pid === log.pid ? `the timer (${pid})` : mains.includes(pid) ? `another Node process (${pid})` : undefined
  const events = log.events.map(([s, e]) => [s / 1e9, e / 1e9]).sort((x, y) => (y[1] - y[0]) - (x[1] - x[0])).slice(0, top)
  const rows = events.map(([a, b]) => ({ dur: b - a, ...classify(sched, mains, roleOf, a, b), states: states(sched, mains, roleOf, a, b) }))
  const counts = new Map()
  for (const r of rows) { const k = r.cls === 'preempted' ? `preempted, by ${r.who.replace(/ \(\d+\)/, '')}` : `${r.cls}${r.cls === 'running' ? `: ${r.who.replace(/ \(\d+\)/, '')}` : ''}`; counts.set(k, (counts.get(k) ?? 0) + 1) }
  console.log(`\nThe ${rows.length} slowest events of process ${log.pid}${log.what ? ` (${log.what})` : ''}, ${us(rows.at(-1)?.dur ?? 0)} .. ${us(rows[0]?.dur ?? 0)}:`)
  console.log('| class | events |\n| --- | ---: |')
  for (const [k, n] of [...counts].sort((x, y) => y[1] - x[1])) console.log(`| ${k} | ${n} |`)
  const pre = rows.filter(r => r.cls === 'preempted')
  if (pre.length > 0) console.log(`\nOf the ${pre.length} preempted, another CPU sat idle for over half the wait in ${pre.filter(r => r.idle > r.wait / 2).length}.`)
  console.log('\n| event | class | detail | the Node main threads meanwhile |\n| ---: | --- | --- | --- |')
  for (const r of rows) console.log(`| ${us(r.dur)} | ${r.cls} | ${r.detail} | ${r.states} |`)
}

try { main() } catch (err) { process.stderr.write(`tail-sched: ${err.message}\n`); process.exit(1) }
