'use strict'
// Closing an shm connection detaches no ArrayBuffer: detaching any one invalidates V8's
// process-wide ArrayBufferDetaching protector, after which every optimized typed-array access in
// the process checks for detachment (`fastsock npb cg --class A --np 2`: 0.87 s with the views
// detached, 0.70 s without; docs/npb.md). The views of the segment stay
// attached and the shared pages under them are swapped for private zero pages at close
// (csrc/shm/segment.cc Segment::Release), so the segment is no longer mapped once both ends
// closed, while the views are still alive. A child process runs with V8's
// --trace-protector-invalidation and says when it is done; an invalidation before that fails.
const t = require('tap')
const { spawnSync } = require('child_process')
const path = require('path')
const { rungs } = require('../helpers/rungs')

const skip = !rungs.includes('shm') && 'shm is not available here'

const CHILD = `
const fs = require('fs')
const fastsock = require(${JSON.stringify(path.join(__dirname, '..', '..'))})
const segments = () => fs.readFileSync('/proc/self/maps', 'utf8').split('\\n').filter(l => l.includes('fastsock-shm')).length
const srv = fastsock.createServer({ transports: ['shm'] }, (s) => { s.on('data', (d) => s.write(d)); s.on('end', () => s.end()) })
srv.listen(0, '127.0.0.1', () => {
  const c = fastsock.connect({ port: srv.address().port, host: '127.0.0.1', transports: ['shm'] }, () => {
    console.log('transport ' + c.transport)
    console.log('mapped while open ' + segments())
    // Bytes both ways, small (copied in from JS through the views) and large (native writev).
    c.write('small')
    c.write(Buffer.alloc(256 * 1024, 7))
  })
  let got = 0
  c.on('data', (d) => { got += d.length; if (got === 5 + 256 * 1024) c.end() })
  c.on('close', () => srv.close(() => setTimeout(() => {
    console.log('echoed ' + got)
    console.log('mapped after close ' + segments())
    console.log('done')
    // The control: a detach here must show, or this V8 does not trace the protector.
    const b = new ArrayBuffer(8)
    structuredClone(b, { transfer: [b] })
    console.log('control')
  }, 50)))
})
`

t.test('closing shm connections leaves the ArrayBufferDetaching protector intact', { skip }, async (t) => {
  const r = spawnSync(process.execPath, ['--trace-protector-invalidation', '-e', CHILD], { encoding: 'utf8', timeout: 60000 })
  t.equal(r.status, 0, `the child exits 0 (stderr: ${r.stderr.slice(-2000)})`)
  const lines = r.stdout.split('\n')
  t.ok(lines.includes('transport shm'), 'the connection ran on shm')
  t.ok(lines.includes('echoed ' + (5 + 256 * 1024)), 'every byte came back')
  const open = lines.find((l) => l.startsWith('mapped while open '))
  t.ok(open && Number(open.split(' ').pop()) > 0, `the segment is mapped while open (${open})`)
  t.ok(lines.includes('mapped after close 0'), 'no mapping of the segment is left after both ends closed')
  const done = lines.indexOf('done')
  t.ok(done > 0, 'the child finished')
  const before = lines.slice(0, done).filter((l) => l.includes('ArrayBufferDetaching'))
  t.same(before, [], 'no ArrayBuffer was detached while the program ran')
  const control = lines.indexOf('control')
  t.ok(control > done && lines.slice(done, control).some((l) => l.includes('ArrayBufferDetaching')),
    'the control detach after it is traced (this V8 reports the protector)')
})
