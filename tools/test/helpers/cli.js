'use strict'
// The tools' tests run the command as users run it: the library's `fastsock`, which hands pipe,
// rate and osu to fastsock-tools.
const path = require('path')
const { execFile } = require('child_process')

/** The repository (the library), fastsock-tools, and the library's command line. */
const root = path.join(__dirname, '..', '..', '..')
const tools = path.join(__dirname, '..', '..')
const cli = path.join(root, 'dist', 'cli', 'main.js')

/**
 * Runs `fastsock <args>`; resolves with { code, signal, stdout, stderr } and never rejects (a
 * non-zero exit is a code; -1 when it died without one). `opts` go to execFile (100 s timeout).
 */
function run (args, opts = {}) {
  return new Promise((resolve) => {
    execFile(process.execPath, [cli, ...args], { timeout: 100_000, maxBuffer: 64 << 20, ...opts }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, signal: err && err.signal, stdout, stderr })
    })
  })
}

module.exports = { root, tools, cli, run }
