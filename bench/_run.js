'use strict'
/**
 * Shared by the bench/ scripts: runs `fastsock pipe` as `npx fastsock pipe` does (the library's
 * dist/cli, handing pipe to this repository's fastsock-tools workspace, tools/dist) with the
 * script's preset flags followed by the user's own (later flags win), and exits with its status.
 */
const fs = require('fs')
const path = require('path')

const entry = path.join(__dirname, '..', 'dist', 'cli', 'main.js')
const tools = path.join(__dirname, '..', 'tools', 'dist', 'main.js')

module.exports = function runPipe (presetArgs) {
  const missing = [entry, tools].find(f => !fs.existsSync(f))
  if (missing !== undefined) {
    process.stderr.write(`${missing} is missing: build first (npm run build:ts)\n`)
    process.exit(1)
  }
  const { main } = require(entry)
  main(['pipe', ...presetArgs, ...process.argv.slice(2)]).then(
    (code) => process.exit(code),
    (err) => { process.stderr.write(`${err && err.stack ? err.stack : err}\n`); process.exit(1) }
  )
}
