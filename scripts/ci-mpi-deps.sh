#!/usr/bin/env bash
# Installs, with apt, what fastsock/mpi's launcher tests need (docs/mpi-launch.md), so that in CI
# (CI=true) they run instead of skipping:
#   openmpi-bin libopenmpi-dev  Open MPI's mpirun (test/mpi/launch-openmpi.test.js) and mpicc
#                               (fastsock osu's C side)
#   mpich                       MPICH's mpiexec.hydra (test/mpi/launch-hydra.test.js); its
#                               alternatives have a lower priority (40) than Open MPI's (50), so
#                               mpirun, mpiexec and mpicc keep resolving to Open MPI
#   slurm-wlm munge             srun on a one-node cluster the test starts (test/mpi/slurm-srun.test.js)
#   iproute2                    ip netns (test/mpi/netns-split.test.js)
# Non-interactive and idempotent: when every package is installed already it runs no apt at all
# (a second or so). Needs root (or sudo). Exit status: apt-get's.
set -euo pipefail

packages=(openmpi-bin libopenmpi-dev mpich slurm-wlm munge iproute2)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed'; then missing+=("$p"); fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "ci-mpi-deps: already installed: ${packages[*]}"
  exit 0
fi

SUDO=()
if [ "$(id -u)" -ne 0 ]; then SUDO=(sudo -n); fi
export DEBIAN_FRONTEND=noninteractive
echo "ci-mpi-deps: installing ${missing[*]}"
"${SUDO[@]}" apt-get update -q
# Daemons the packages would start (munged, slurmctld, slurmd) are not wanted: the tests start
# their own. policy-rc.d answers "not allowed" to invoke-rc.d for the time of the install.
policy=/usr/sbin/policy-rc.d
added_policy=0
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' | "${SUDO[@]}" tee "$policy" >/dev/null
  "${SUDO[@]}" chmod 755 "$policy"
  added_policy=1
fi
status=0
"${SUDO[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}" || status=$?
if [ $added_policy -eq 1 ]; then "${SUDO[@]}" rm -f "$policy"; fi
# Open MPI's must stay the default mpirun/mpicc whatever the order of installation was.
if command -v mpirun >/dev/null && ! mpirun --version 2>/dev/null | grep -q 'Open MPI'; then
  echo "ci-mpi-deps: warning: mpirun is not Open MPI's after the install" >&2
fi
exit $status
