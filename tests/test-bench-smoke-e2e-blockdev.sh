#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/e2e-blockdev.sh runs at toy sizes (--smoke) to its end
# (tests/lib/bench-smoke.sh); it makes loop devices, so it needs root.
if [ "$(id -u)" != 0 ] || ! command -v losetup >/dev/null ||
        [ ! -e /dev/loop-control ]; then
    echo "$0: SKIP: loop devices need root, losetup and /dev/loop-control"
    exit 77
fi
exec "$(dirname "$0")/lib/bench-smoke.sh" e2e-blockdev "nbdkit pinned to 1 core"
