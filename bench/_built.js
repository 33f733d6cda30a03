'use strict'
/**
 * Shared by the bench/ scripts that run the built command line (`fastsock osu`, `fastsock rate`):
 * its path, the tools' workspace, and the harness helpers they print with. Exits with a hint when
 * the library is not built.
 */
const fs = require('fs')
const path = require('path')

const cli = path.join(__dirname, '..', 'dist', 'cli', 'main.js')
// The tools' own modules (the fastsock-tools workspace, tools/: npm install builds it).
const tools = path.join(__dirname, '..', 'tools', 'dist')
if (!fs.existsSync(cli)) {
  process.stderr.write(`${cli} is missing: build first (npx tsc -p . && node scripts/esm-wrapper.js)\n`)
  process.exit(1)
}
const { median } = require(path.join(tools, 'harness', 'stats.js'))
const { table } = require(path.join(tools, 'harness', 'table.js'))
const { fmt, fmtRatio, formatBytes } = require(path.join(tools, 'harness', 'units.js'))

module.exports = { cli, tools, median, table, fmt, fmtRatio, formatBytes }
