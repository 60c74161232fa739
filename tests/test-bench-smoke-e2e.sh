#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# bench/e2e.sh runs at toy sizes (--smoke) to its end (tests/lib/bench-smoke.sh).
exec "$(dirname "$0")/lib/bench-smoke.sh" e2e "server CPU time per request"
