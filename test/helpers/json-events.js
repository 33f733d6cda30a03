'use strict'
// The JSON lines a child process prints on its stdout, as events a test waits for: shared by
// the helpers and tests that drive a live rank or a squatter (test/helpers/mpi-wire.js,
// test/helpers/store-squatter.js, test/mpi/squat-claim.test.js).
const readline = require('readline')

/**
 * Reads `child`'s stdout (piped) line by line; lines that are not JSON are skipped. Returns
 * { events (every parsed line so far, in order), next(pred, ms), exited, stderr }:
 * - next(pred, ms): the first event, past or future, for which pred is true; rejects when
 *   `child` exits first, or, with `ms`, when none came within `ms` milliseconds (the error names
 *   `what`, its stderr and the events so far);
 * - exited: a promise of { code, signal } once it exited and its output was read;
 * - stderr: what it wrote on stderr so far, when piped.
 */
function jsonEvents (child, what = 'the process') {
  const events = []
  const waiters = []
  let stderr = ''
  child.stderr?.on('data', d => { stderr += d })
  readline.createInterface({ input: child.stdout }).on('line', line => {
    let ev
    try { ev = JSON.parse(line) } catch { return }
    events.push(ev)
    for (const w of [...waiters]) if (w.pred(ev)) { waiters.splice(waiters.indexOf(w), 1); w.resolve(ev) }
  })
  // 'close', not 'exit': it comes after the last line of stdout was read.
  const exited = new Promise(resolve => child.once('close', (code, signal) => resolve({ code, signal })))
  const next = (pred, ms) => {
    const found = events.find(pred)
    if (found !== undefined) return Promise.resolve(found)
    return new Promise((resolve, reject) => {
      let timer = null
      const w = { pred, resolve: ev => { if (timer !== null) clearTimeout(timer); resolve(ev) } }
      if (ms !== undefined) {
        timer = setTimeout(() => {
          waiters.splice(waiters.indexOf(w), 1)
          reject(new Error(`no such event from ${what} within ${ms} ms; stderr: ${stderr}; events: ${JSON.stringify(events)}`))
        }, ms)
      }
      waiters.push(w)
      exited.then(({ code, signal }) => {
        if (!waiters.includes(w)) return
        waiters.splice(waiters.indexOf(w), 1)
        if (timer !== null) clearTimeout(timer)
        reject(new Error(`${what} exited (code ${code}, signal ${signal}): ${stderr}; events: ${JSON.stringify(events)}`))
      })
    })
  }
  return { events, next, exited, get stderr () { return stderr } }
}

module.exports = { jsonEvents }
