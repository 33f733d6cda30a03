#!/usr/bin/env bash
# Runs inside the RDMA guest (scripts/test-rdma.js). Arguments: tap files to run instead of the
# default set. Two passes:
#   1. rxe0 (RoCEv2, 10.0.0.1): the conformance suite on verbs, rsocket, smc (SMC-R on
#      127.0.0.1) and tcp, plus every RDMA-specific test (test/rdma, fastsock/mpi's
#      mpi-verbs.test.js included);
#   2. siw0 (iWARP, 10.0.1.1): the conformance suite, the verbs tests and fastsock/mpi ranks
#      over verbs.
# Files run as plain `node <file>` through scripts/run-tests.js: under the guest's emulated CPU
# the tap runner's own start-up costs several times what a test file does.
set -u
if [ -z "${RDMAVM:-}" ]; then echo "test-rdma-inner.sh runs inside ../shared/tools/rdma-vm (npm run test:rdma)" >&2; exit 2; fi
status=0
files=("$@")
if [ ${#files[@]} -eq 0 ]; then files=(test/conformance test/rdma); fi
echo "== pass 1: rxe0 ($RDMAVM_IP): verbs, rsocket, smc, tcp"
FASTSOCK_TEST_RUNGS=verbs,rsocket,smc,tcp node scripts/run-tests.js "${files[@]}" || status=1
[ $# -eq 0 ] && { echo "== fastsock rate --quick on every rung up here (rxe0 for verbs, rsocket)"; node dist/cli/main.js rate --quick --pattern single,pair --peers 1 --sizes 64 --cache warm --rtt-iterations 0 --no-plot --no-progress || status=1; }
if [ $# -eq 0 ]; then
  echo "== pass 2: siw0 ($RDMAVM_SIW_IP): verbs over iWARP"
  FASTSOCK_TEST_RDMA_DEV=siw FASTSOCK_TEST_RUNGS=verbs node scripts/run-tests.js test/conformance test/rdma/verbs.test.js test/rdma/mpi-verbs.test.js || status=1
fi
exit $status
