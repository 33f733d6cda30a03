'use strict'
// The test suite's self-signed certificate for localhost / 127.0.0.1 (bench/https.js, http2.js).
const fs = require('fs')
const path = require('path')
const dir = path.join(__dirname, '..', 'test', 'fixtures', 'transparency')
module.exports = { key: fs.readFileSync(path.join(dir, 'key.pem')), cert: fs.readFileSync(path.join(dir, 'cert.pem')) }
