#!/usr/bin/env bash
# Runs inside the RDMA guest (scripts/test-rdma.js). Arguments: tap files to run instead of the
# default set. Two passes:
#   1. rxe0 (RoCEv2, 10.0.0.1): the conformance suite on verbs, rsocket, smc (SMC-R on
#      127.0.0.1) and tcp, plus every RDMA-specific test (test/rdma, fastsock/mpi's
#      mpi-verbs.test.js included);
#   2. siw0 (iWARP, 10.0.1.1): the verbs tests, fastsock/mpi ranks over verbs, and the
#      conformance files whose outcome depends on the RDMA provider: the data path (echo, large
#      writes, backpressure, unread data) and the connection's life (refused, reset, half-open,
#      end/destroy, a peer gone, closing a server, a connect in flight). The rest of the suite
#      tests the socket layer above the rung, the same over either provider, and runs in pass 1.
#      Each file costs ~15 s of start-up here (`require('tap')` alone 12 s), so the list is
#      kept to what pass 1 does not already cover.
# Files run as plain `node <file>` through scripts/run-tests.js: under the guest's emulated CPU
# the tap runner's own start-up costs several times what a test file does.
set -u
if [ -z "${RDMAVM:-}" ]; then echo "test-rdma-inner.sh runs inside ../shared/tools/rdma-vm (npm run test:rdma)" >&2; exit 2; fi
status=0
files=("$@")
if [ ${#files[@]} -eq 0 ]; then files=(test/conformance test/rdma); fi
SECONDS=0
echo "== pass 1: rxe0 ($RDMAVM_IP): verbs, rsocket, smc, tcp"
FASTSOCK_TEST_RUNGS=verbs,rsocket,smc,tcp node scripts/run-tests.js "${files[@]}" || status=1
[ $# -eq 0 ] && { echo "== fastsock rate --quick on every rung up here (rxe0 for verbs, rsocket)"; node dist/cli/main.js rate --quick --pattern single,pair --peers 1 --sizes 64 --cache warm --rtt-iterations 0 --no-plot --no-progress || status=1; }
echo "== pass 1 took ${SECONDS} s"
if [ $# -eq 0 ]; then
  SECONDS=0
  echo "== pass 2: siw0 ($RDMAVM_SIW_IP): verbs over iWARP"
  provider_files=()
  for f in backpressure echo echo-unread-1mb large-write half-open end-vs-destroy reset write-to-gone-peer econnrefused while-connecting server-close; do
    provider_files+=("test/conformance/$f.test.js")
  done
  FASTSOCK_TEST_RDMA_DEV=siw FASTSOCK_TEST_RUNGS=verbs node scripts/run-tests.js "${provider_files[@]}" test/rdma/verbs.test.js test/rdma/mpi-verbs.test.js || status=1
  echo "== pass 2 took ${SECONDS} s"
fi
exit $status
