'use strict'
/**
 * Shared by the bench/ scripts: runs `fastsock pipe` from the built package (dist/cli) with the
 * script's preset flags followed by the user's own (later flags win), and exits with its status.
 */
const fs = require('fs')
const path = require('path')

const entry = path.join(__dirname, '..', 'dist', 'cli', 'main.js')

module.exports = function runPipe (presetArgs) {
  if (!fs.existsSync(entry)) {
    process.stderr.write(`${entry} is missing: build first (npm run build:ts)\n`)
    process.exit(1)
  }
  const { main } = require(entry)
  main(['pipe', ...presetArgs, ...process.argv.slice(2)]).then(
    (code) => process.exit(code),
    (err) => { process.stderr.write(`${err && err.stack ? err.stack : err}\n`); process.exit(1) }
  )
}
