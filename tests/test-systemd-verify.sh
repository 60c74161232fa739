#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# The systemd units make install installs pass systemd-analyze verify
# without a word (an unknown key is only a warning there: any output
# fails), the service's ExecStart names the nbdkit and the plugin
# directory configure found, the service restarts nbdkit when it dies
# (Restart=on-failure, after RestartSec), and a unit with a mistake does
# not pass, so that the check can fail at all.

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
if ! command -v systemd-analyze > /dev/null; then
    echo "SKIP: systemd-analyze is not installed (Debian package systemd;" \
         "scripts/install-deps.sh installs it)"
    exit 77
fi
service=$top_builddir/systemd/nbdkit-raid@.service
[ -f "$service" ] || { fail "$service was not built"; exit 1; }
# Side by side, so that the service's Requires= finds the socket unit.
mkdir "$tmpdir/units"
cp "$service" "$top_srcdir/systemd/nbdkit-raid@.socket" "$tmpdir/units/"

# verify FILE...: systemd-analyze's status and everything it printed.
# The man pages named by Documentation= are ours, not installed yet.
verify ()
{
    systemd-analyze verify --man=no "$@" > "$tmpdir/out" 2>&1
}

if verify "$tmpdir/units/nbdkit-raid@.service" \
          "$tmpdir/units/nbdkit-raid@.socket" && [ ! -s "$tmpdir/out" ]; then
    echo "ok: systemd-analyze verify passes both units"
else
    fail "systemd-analyze verify: $(cat "$tmpdir/out")"
fi

exec=$(sed -n 's/^ExecStart=//p' "$service")
nbdkit=$(sed -n 's/^NBDKIT = //p' "$top_builddir/Makefile")
plugindir=$(sed -n 's/^plugindir = //p' "$top_builddir/Makefile")
case "$exec" in
    "$nbdkit --foreground "*" $plugindir/nbdkit-raid-plugin.so control=/run/nbdkit-raid/%i.ctl "*)
        echo "ok: ExecStart=$exec" ;;
    *) fail "ExecStart=$exec: not $nbdkit in the foreground with" \
            "$plugindir/nbdkit-raid-plugin.so and control=/run/nbdkit-raid/%i.ctl" ;;
esac
grep -qx 'Requires=nbdkit-raid@%i.socket' "$service" ||
    fail "the service does not require its socket unit"
grep -qx 'Restart=on-failure' "$service" && grep -q '^RestartSec=' "$service" ||
    fail "the service does not restart nbdkit when it dies"

# A unit with a mistake must not pass: an unknown key, and a program that
# does not exist.
mkdir "$tmpdir/bad"
sed 's/^Type=exec$/Type=exec\nTimeoutStopSecs=5min/' "$service" \
    > "$tmpdir/bad/nbdkit-raid@.service"
cp "$top_srcdir/systemd/nbdkit-raid@.socket" "$tmpdir/bad/"
if verify "$tmpdir/bad/nbdkit-raid@.service" && [ ! -s "$tmpdir/out" ]; then
    fail "a misspelt key passes: the check checks nothing"
else
    echo "ok: a misspelt key is caught: $(head -1 "$tmpdir/out")"
fi
sed "s|^ExecStart=$nbdkit |ExecStart=$tmpdir/no-such-nbdkit |" "$service" \
    > "$tmpdir/bad/nbdkit-raid@.service"
if verify "$tmpdir/bad/nbdkit-raid@.service"; then
    fail "a missing program passes: the check checks nothing"
else
    echo "ok: a missing program is caught: $(head -1 "$tmpdir/out")"
fi
end_failures
