'use strict'
// Busy polling for the side channel's reply (ReplyWindow, lib/sidechannel/framed-read.ts): the window, a field
// of the side channel's connector, is learned from recent reply latencies and bounded by shmPollUs (0: off). Against a server in this
// process, which cannot answer while the client polls, a window that is on shows as several
// empty reads of the client's side channel before it sleeps, and one that is off as at most one.
const t = require('tap')
const fastsock = require('../..')
const { native } = require('../../dist/native')
const { ReplyWindow, REPLY_POLL_CAP_US } = require('../../dist/sidechannel/framed-read')
const { sideChannel } = require('../../dist/sidechannel/connector')
const { rungs } = require('../helpers/rungs')
const { once, within } = require('../helpers/util')

const skip = !rungs.includes('shm') && 'shm is not available here'
const EAGAIN = -11

t.test('the window: bounded by shmPollUs, off after late replies, on again after quick ones', async t => {
  const w = new ReplyWindow()
  const replyPollUs = pollUs => w.pollUs(pollUs)
  const recordReplyUs = us => w.record(us)
  t.equal(replyPollUs(0), 0, 'shmPollUs 0 turns it off')
  t.equal(replyPollUs(undefined), REPLY_POLL_CAP_US, 'on with nothing learned yet')
  t.equal(replyPollUs(20), 20, 'bounded by a smaller shmPollUs')
  t.equal(replyPollUs(1e6), REPLY_POLL_CAP_US, 'never above the cap')
  for (let i = 0; i < 8; i++) recordReplyUs(500)
  t.equal(replyPollUs(undefined), 0, 'off when replies come late')
  for (let i = 0; i < 8; i++) recordReplyUs(30)
  t.equal(replyPollUs(undefined), REPLY_POLL_CAP_US, 'on again when they come quickly')
})

t.test('the client polls its side channel only when the window is on', { skip }, async t => {
  const server = fastsock.createServer(s => s.end())
  await new Promise(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => server.close())
  const port = server.address().port
  // Empty reads of the client's own side channel (the listener, in this process, reads others).
  const clientFds = new Set()
  let empty = 0
  const { connectAbstract, recvFds } = native
  native.connectAbstract = name => { const fd = connectAbstract(name); clientFds.add(fd); return fd }
  native.recvFds = (fd, ...rest) => { const r = recvFds(fd, ...rest); if (r === EAGAIN && clientFds.has(fd)) empty++; return r }
  t.teardown(() => Object.assign(native, { connectAbstract, recvFds }))

  async function connect (options) {
    empty = 0
    clientFds.clear()
    const c = fastsock.connect({ port, host: '127.0.0.1', transports: ['shm'], ...options })
    await within(once(c, 'connect'), 5000, 'connect')
    t.equal(c.transport, 'shm')
    c.destroy()
    await once(c, 'close')
    return empty
  }
  const recordReplyUs = us => sideChannel.replies.record(us)
  await connect({}) // the first connect learns that the server pipelines SHM_SETUP
  for (let i = 0; i < 8; i++) recordReplyUs(10)
  t.ok(await connect({}) > 1, 'polled before sleeping (window on)')
  t.ok(await connect({ shmPollUs: 0 }) <= 1, 'shmPollUs 0: one empty read, then it sleeps')
  for (let i = 0; i < 8; i++) recordReplyUs(10_000)
  t.ok(await connect({}) <= 1, 'late replies: one empty read, then it sleeps')
})
