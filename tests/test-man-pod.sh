#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The man pages' POD is well formed and every internal link (L</Section>)
# names a section that exists: podchecker reports no error and no
# warning for any page under man/.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires podchecker

src=${top_srcdir:-$(dirname "$0")/..}
for pod in "$src"/man/*.pod; do
    out=$(podchecker -warnings "$pod" 2>&1)
    if ! grep -q "pod syntax OK" <<< "$out" ||
            grep -qE "ERROR|WARNING" <<< "$out"; then
        fail "$(basename "$pod"): $out"
    fi
done
end_failures
