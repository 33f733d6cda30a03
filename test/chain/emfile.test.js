'use strict'
// Under fd pressure the chain declines shm before the limit bites, and an shm set-up that runs
// out of fds (EMFILE) falls back like any other failure: with RLIMIT_NOFILE at 1024 (a common
// default), 400 connections with both ends in one process all connect (some on shm, the rest on
// TCP), and a client with only a few fds left still connects over TCP. No error reaches the
// application (Node's net would connect them all too).
const t = require('tap')
const { execFileSync } = require('child_process')
const { rungs } = require('../helpers/rungs')

let prlimit = true
try { execFileSync('prlimit', ['--version'], { stdio: 'ignore' }) } catch { prlimit = false }
const skip = (!rungs.includes('shm') && 'shm is not available here') || (!prlimit && 'needs prlimit (util-linux)')

t.test('400 connections under ulimit -n 1024', { skip, timeout: 120000 }, async t => {
  const out = JSON.parse(execFileSync('prlimit', ['--nofile=1024', process.execPath, require.resolve('../fixtures/many-under-limit.js'), '400', 'squeeze'],
    { encoding: 'utf8', timeout: 110000, env: { ...process.env, LEAVE_FDS: '2' } }).trim().split('\n').pop())
  t.same(out.errors, [], 'no error reached the application')
  t.equal(out.ok, 400, `all 400 connected: ${JSON.stringify(out.transports)}`)
  t.ok((out.transports.shm || 0) > 0, 'some on shm')
  t.equal(out.squeezed, 'tcp', 'a client with 2 fds left connects over tcp, as Node\'s net does')
})
