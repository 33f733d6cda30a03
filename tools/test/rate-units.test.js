'use strict'
// The pieces of `fastsock rate` that need no peer process: the last-level cache probe and the
// flush size, the cell list, the in-band protocol's byte counts, the window sender and byte
// counter over a real socket pair, and the derived ratios and targets.
const t = require('tap')
const net = require('net')
const path = require('path')

const rate = path.join(__dirname, '..', 'dist', 'rate')
const { lastLevelCache, parseCacheSize, flushSize, CacheFlusher } = require(path.join(rate, 'cache.js'))
const { preset, resolveConfig } = require(path.join(rate, 'config.js'))
const { cellsOf } = require(path.join(rate, 'runner.js'))
const { hubExpects, roles } = require(path.join(rate, 'protocol.js'))
const { ByteCounter, Payload, sendMessages } = require(path.join(rate, 'window.js'))
const { derive } = require(path.join(rate, 'summary.js'))

t.test('the last-level cache comes from sysfs', async (t) => {
  t.equal(parseCacheSize('32768K'), 32 << 20)
  t.equal(parseCacheSize('2M'), 2 << 20)
  t.equal(parseCacheSize('512'), 512)
  t.equal(parseCacheSize('lots'), null)
  const dir = t.testdir({
    index0: { level: '1\n', type: 'Data\n', size: '48K\n' },
    index1: { level: '1\n', type: 'Instruction\n', size: '64K\n' },
    index2: { level: '2\n', type: 'Unified\n', size: '2048K\n' },
    index3: { level: '3\n', type: 'Unified\n', size: '16384K\n' }
  })
  const llc = lastLevelCache(dir)
  t.equal(llc.bytes, 16 << 20, 'the highest level wins')
  t.match(llc.source, /L3/)
  t.same(lastLevelCache(path.join(dir, 'none')).bytes, null, 'no sysfs: unknown')
  t.equal(flushSize(null, 16 << 20, 64 << 20).bytes, 32 << 20, '2 × the LLC')
  const capped = flushSize(null, 480 << 20, 32 << 20)
  t.equal(capped.bytes, 32 << 20, 'capped')
  t.match(capped.note, /capped/, 'and says so')
  t.equal(flushSize(1 << 20, 16 << 20, 64 << 20).bytes, 1 << 20, 'configured size wins')
  t.equal(flushSize(null, null, 64 << 20).bytes, 16 << 20, "unknown: msgrate's 16 MiB")
  const f = new CacheFlusher(4096)
  const a = f.flush()
  t.ok(f.flush() > a, 'each flush writes every cache line anew')
})

t.test('cells: every pattern, direction, cache state, peers and size; bidirectional warm only', async (t) => {
  const config = resolveConfig(null, { sizes: [8, 64], peers: [1, 2], coldCache: [false, true] })
  const cells = cellsOf(config)
  const count = (p) => cells.filter((c) => c.pattern === p).length
  t.equal(count('single-direction'), 2 * 2 * 2 * 2)
  t.equal(count('pair-based'), 2 * 2 * 2)
  t.equal(count('all-start'), 2 * 2 * 2)
  t.equal(count('bidirectional'), 2 * 2, 'bidirectional: no cold cells')
  t.ok(cells.filter((c) => c.pattern !== 'single-direction').every((c) => c.direction === 'both'))
  t.same(resolveConfig({ quick: true }, {}).sizes, preset(true).sizes, 'quick from the file picks the quick preset')
  t.same(resolveConfig({ sizes: [64, 8] }, {}).sizes, [8, 64], 'sizes sorted')
})

t.test('protocol: what the hub expects back per iteration', async (t) => {
  t.same(roles('fan-out'), { hubSends: true, peerSends: false })
  t.same(roles('fan-in'), { hubSends: false, peerSends: true })
  t.same(roles('both'), { hubSends: true, peerSends: true })
  t.equal(hubExpects({ direction: 'fan-out', bytes: 64, messages: 10 }), 1, 'an ack')
  t.equal(hubExpects({ direction: 'fan-in', bytes: 64, messages: 10 }), 640, 'the window')
  t.equal(hubExpects({ direction: 'both', bytes: 64, messages: 10 }), 641, 'the window and an ack')
})

t.test('a window goes out as messages of n bytes and is counted exactly', async (t) => {
  const server = net.createServer()
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const accepted = new Promise((resolve) => server.once('connection', resolve))
  const client = net.connect(server.address().port, '127.0.0.1')
  await new Promise((resolve) => client.once('connect', resolve))
  const peer = await accepted
  t.teardown(() => { client.destroy(); peer.destroy() })
  const counter = new ByteCounter(peer)
  const payload = new Payload()
  payload.resize(16, 100)
  t.equal(payload.views.length, 16)
  t.ok(payload.views.every((v) => v.length === 100), 'one view per message')
  payload.touch()
  const seed = payload.views[15][99]
  payload.touch()
  t.not(payload.views[15][99], seed, 'touch() writes every byte of the window')
  // 40 messages = two full windows and a partial one, with a control byte first.
  await sendMessages(client, payload, 40, Buffer.from('G'))
  await counter.expect(1 + 40 * 100)
  const extra = counter.expect(1)
  client.write('x')
  await extra
  t.pass('the next expectation starts after the previous one exactly')
  const pending = counter.expect(10)
  client.destroy()
  await t.rejects(pending, /closed/, 'a closed connection rejects the waiting expectation')
})

t.test('derived ratios and targets', async (t) => {
  const row = (channel, msgPerSec, extra = {}) => ({
    channel, transport: channel.split(':')[1], label: channel, pattern: 'single-direction', direction: 'fan-out', bytes: 64, peers: 1,
    window: 64, coldCache: false, msgPerSec, deliveredPerSec: msgPerSec / 2, ratioVsNetTcp: null, coldOverWarm: null, ...extra
  })
  const result = {
    rows: [
      row('fastsock:shm', 3.2e6), row('net:tcp', 1e6), row('fastsock:shm', 1.6e6, { coldCache: true }), row('net:tcp', 0.8e6, { coldCache: true }),
      row('fastsock:shm', 2e6, { pattern: 'pair-based', direction: 'both', peers: 2 }), row('net:tcp', 1e6, { pattern: 'pair-based', direction: 'both', peers: 2 }),
      row('net:unix', 2.5e6, { pattern: 'pair-based', direction: 'both', peers: 2 })
    ],
    targets: []
  }
  derive(result)
  const [shm, tcp, shmCold, tcpCold] = result.rows
  t.equal(shm.ratioVsNetTcp, 3.2)
  t.equal(tcp.ratioVsNetTcp, 1)
  t.equal(shmCold.ratioVsNetTcp, 2)
  t.equal(shmCold.coldOverWarm, 0.5, 'cold ÷ warm of the same channel and cell')
  t.equal(tcpCold.coldOverWarm, 0.8)
  t.equal(shm.coldOverWarm, null)
  const single = result.targets.find((x) => /single-direction/.test(x.target))
  t.equal(single.met, true, '3.2 M msg/s and 3.2× net:tcp meet the first target')
  const pair = result.targets.find((x) => /pair-based, 2 peers/.test(x.target))
  t.equal(pair.met, false, 'behind net:unix')
  t.match(pair.detail, /64 B vs net:unix \(0\.80×\)/)
  t.equal(result.targets.find((x) => /pair-based, 4 peers/.test(x.target)).met, null, 'not measured')

  // The second target is judged on the warm cells; the cold cells' standing is only reported.
  const pairRows = { pattern: 'pair-based', direction: 'both', peers: 4 }
  const cold = {
    rows: [
      row('fastsock:shm', 2e6, pairRows), row('net:tcp', 1e6, pairRows), row('net:unix', 1.5e6, pairRows),
      row('fastsock:shm', 0.5e6, { ...pairRows, coldCache: true }), row('net:tcp', 1e6, { ...pairRows, coldCache: true }), row('net:unix', 0.4e6, { ...pairRows, coldCache: true })
    ],
    targets: []
  }
  derive(cold)
  const four = cold.targets.find((x) => /pair-based, 4 peers/.test(x.target))
  t.equal(four.met, true, 'ahead in every warm cell')
  t.match(four.detail, /lowest ratio 1\.33× over 1 cells/)
  t.match(four.detail, /cold cells \(printed beside, not part of the target\): behind at 64 B vs net:tcp \(0\.50×\)/, 'a cold cell behind is reported')
  t.notMatch(four.detail, /vs net:unix \(1\.25×\)/, 'only the cells behind are listed')
})
