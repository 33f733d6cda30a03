'use strict'
// The peer process of bench/late-peer.js and bench/idle.js: a server (plain `net`, or fastsock
// with its defaults when argv[2] is 'fastsock') that answers every 64-byte message with the same
// bytes after argv[3] ms (0: at once). On 'cpu' from stdin it prints its own CPU time since the
// previous 'cpu' ({ cpuUs }). Prints { port } when listening.
const lib = process.argv[2] === 'fastsock' ? require('..') : require('net')
const delayMs = Number(process.argv[3] || 0)
const MESSAGE_BYTES = 64
const server = lib.createServer(s => {
  s.on('error', () => {})
  let got = 0
  s.on('data', d => {
    got += d.length
    for (; got >= MESSAGE_BYTES; got -= MESSAGE_BYTES) {
      const reply = Buffer.alloc(MESSAGE_BYTES, 1)
      if (delayMs > 0) setTimeout(() => s.write(reply), delayMs)
      else s.write(reply)
    }
  })
})
let cpu0 = process.cpuUsage()
process.stdin.setEncoding('utf8')
process.stdin.on('data', () => {
  const u = process.cpuUsage(cpu0)
  cpu0 = process.cpuUsage()
  process.stdout.write(JSON.stringify({ cpuUs: u.user + u.system }) + '\n')
})
process.stdin.on('end', () => process.exit(0))
server.listen(0, '127.0.0.1', () => process.stdout.write(JSON.stringify({ port: server.address().port }) + '\n'))
