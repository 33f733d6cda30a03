'use strict'
// The receive fast path's learned polling budget (lib/mpi/poll-budget.ts): haltpoll's rule with
// a floor. Times are given, not measured: `now` values are ms as performance.now() gives them.
const t = require('tap')
const { PollBudget } = require('../../dist/mpi/poll-budget')

/** A wait that starts at `start` ms, misses, and whose frame arrives `blockUs` later. */
function missedWait (b, capUs, start, blockUs, t = require('tap')) {
  t.ok(b.left(capUs, start, false) > 0, 'the wait has a budget to spin')
  b.miss()
  t.ok(b.missing)
  b.arrived(start + blockUs / 1000)
  t.notOk(b.missing)
}

t.test('starts at the cap; a wait a larger budget would have caught doubles it (at least 10 µs), up to the cap', async t => {
  const b = new PollBudget(30)
  t.equal(b.left(5000, 100, false), 5000, 'a new wait has the whole cap')
  t.ok(Math.abs(b.left(5000, 100.001, true) - 4999) < 1e-6, 'the next slice of the same wait: what is left')
  missedWait(b, 5000, 200, 9000) // beyond the cap: halves
  t.equal(b.budgetUs, 2500)
  missedWait(b, 5000, 300, 4000) // within the cap: doubles
  t.equal(b.budgetUs, 5000, 'doubled, capped')
})

t.test('a peer that keeps answering late halves the budget down to the floor, not below', async t => {
  const b = new PollBudget(30)
  for (let i = 0; i < 20; i++) missedWait(b, 5000, 1000 + i, 50000)
  t.equal(b.budgetUs, 30, 'the floor')
  missedWait(b, 5000, 2000, 40)
  t.equal(b.budgetUs, 60, 'a quick answer doubles it again')
  const small = new PollBudget(30)
  small.left(20, 0, false)
  for (let i = 0; i < 5; i++) missedWait(small, 20, 10 + i, 50000)
  t.equal(small.budgetUs, 20, 'a cap below the floor is the floor')
})

t.test('a new cap restarts the budget at it', async t => {
  const b = new PollBudget(30)
  for (let i = 0; i < 5; i++) missedWait(b, 5000, 10 + i, 50000)
  t.ok(b.budgetUs < 5000)
  t.equal(b.left(1000, 50, false), 1000)
  t.equal(b.capUs, 1000)
})
