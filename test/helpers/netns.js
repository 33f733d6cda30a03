'use strict'
// Two network namespaces joined by a veth pair, for tests of the cross-host path (ranks in
// different namespaces cannot share memory or a UNIX socket: their connections are TCP). Needs
// root and iproute2's `ip`. Used by test/mpi/netns-split.test.js and tools/test/npb-netns.test.js.
const { spawnSync } = require('child_process')
const { IS_ROOT, IN_CI, need } = require('./mpi-launchers')

/**
 * Plans `t` out (with its reason) when namespaces cannot be made here: no `ip`, or not root (a
 * failure under CI). Else returns { ip, makePair }: `makePair(t, prefix, net)` builds namespaces
 * `${prefix}-a-ID` and `${prefix}-b-ID` joined by veth (addresses `${net}.S.1` and `${net}.S.2`, S a
 * subnet from the pid), removed at `t`'s teardown, and resolves with { NS, DEV, ADDR, id }, or
 * null after t.skip when they cannot be built outside CI.
 */
function netnsOrPlan (t) {
  const dep = need(t, ['ip'], 'iproute2')
  if (dep.skip) { t.plan(0, dep.skip); return null }
  if (!IS_ROOT) {
    if (IN_CI) t.fail('CI=true but not root: network namespaces need root')
    t.plan(0, 'network namespaces need root')
    return null
  }
  const ipPath = dep.paths.ip
  const ip = (...args) => {
    const r = spawnSync(ipPath, args, { encoding: 'utf8', timeout: 10000 })
    if (r.status !== 0) throw new Error(`ip ${args.join(' ')}: ${(r.stderr || r.error || '').toString().trim()}`)
    return r.stdout
  }
  async function makePair (t, prefix, net) {
    const id = process.pid % 100000
    const NS = { A: `${prefix}-a-${id}`, B: `${prefix}-b-${id}` }
    const short = prefix.slice(-2)
    const DEV = { A: `${short}a${id}`, B: `${short}b${id}` }
    const subnet = id % 250
    const ADDR = { A: `${net}.${subnet}.1`, B: `${net}.${subnet}.2` }
    try {
      ip('netns', 'add', NS.A)
      t.teardown(() => { try { ip('netns', 'del', NS.A) } catch {} })
      ip('netns', 'add', NS.B)
      t.teardown(() => { try { ip('netns', 'del', NS.B) } catch {} })
      // Created in A with its peer in B: neither end ever exists in the host's namespace.
      ip('-n', NS.A, 'link', 'add', DEV.A, 'type', 'veth', 'peer', 'name', DEV.B, 'netns', NS.B)
      for (const s of ['A', 'B']) {
        ip('-n', NS[s], 'addr', 'add', `${ADDR[s]}/30`, 'dev', DEV[s])
        ip('-n', NS[s], 'link', 'set', DEV[s], 'up')
        ip('-n', NS[s], 'link', 'set', 'lo', 'up')
      }
      // A veth end set up is not running until its peer is up too (carrier): libuv's interface
      // list, which tells a rank its own addresses, leaves out interfaces without IFF_RUNNING:
      // a rank started before then does not find its own address (its endpoint card and the
      // side channel's "is this address mine" check go wrong).
      const until = Date.now() + 10000
      for (;;) {
        const down = ['A', 'B'].filter(s => !/\bLOWER_UP\b/.test(ip('-n', NS[s], 'link', 'show', DEV[s])))
        if (down.length === 0) break
        if (Date.now() > until) throw new Error(`veth ${down.map(s => DEV[s]).join(', ')} not running after 10 s`)
        await new Promise(resolve => setTimeout(resolve, 20))
      }
    } catch (err) {
      if (IN_CI) throw err
      t.skip(`cannot build the namespaces here: ${err.message}`)
      return null
    }
    return { NS, DEV, ADDR, id }
  }
  return { ip, ipPath, makePair }
}

module.exports = { netnsOrPlan }
