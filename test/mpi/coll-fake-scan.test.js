'use strict'
// reduceScatterBlock, scan and exscan over the in-process fake of the point-to-point layer:
// every algorithm × P = 1..7 × every op × every array kind × 0, 1, 7 elements (coll-cases.js).
const t = require('tap')
const { matrix } = require('./coll-cases')

matrix(t, 'reduceScatterBlock')
matrix(t, 'scan')
matrix(t, 'exscan')
