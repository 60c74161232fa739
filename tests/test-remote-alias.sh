#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# Two URIs that name one NBD export are one disk, and an array given it
# twice has lost its redundancy without knowing.  The plugin must refuse
# them at open, naming both members, by what the connections lead to and
# not by how the URIs are spelled:
#   - one TCP server as nbd://localhost:PORT and nbd://127.0.0.1:PORT,
#     and (where there is IPv6) as nbd://[::1]:PORT and 127.0.0.1;
#   - one Unix socket as PATH and DIR/./NAME, and through a symlink.
# Two different servers on two sockets are still accepted (the control).

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
requires truncate
requires_python_module nbd

truncate -s 4M "$tmpdir/a" "$tmpdir/b" "$tmpdir/local"

# refuse WHAT DISK1 DISK2: the array over DISK1 DISK2 and a local file
# must not start, and its error must name both.
refuse ()
{
    local what=$1 d1=$2 d2=$3
    if raid_nbdkit metadata=none level=5 chunk=64K "disk=$d1" "disk=$d2" \
            "$tmpdir/local" --run true > "$tmpdir/out" 2>&1; then
        echo "$0: $what: the array started with one disk twice" >&2
        exit 1
    fi
    if ! grep -F -- "$d1" "$tmpdir/out" | grep -qF -- "$d2"; then
        echo "$0: $what: no error naming both members:" >&2
        cat "$tmpdir/out" >&2
        exit 1
    fi
    echo "$what: refused: $(grep -F -- "$d2" "$tmpdir/out" | head -n 1)"
}

# A TCP server on a free loopback port (it listens on every address).
port=
for try in 1 2 3; do
    p=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    rm -f "$tmpdir/tcp.pid"
    start_bg nbdkit -f --exit-with-parent -p "$p" -P "$tmpdir/tcp.pid" \
        file "$tmpdir/a"
    for (( i = 0; i < 100; i++ )); do
        [ -s "$tmpdir/tcp.pid" ] && break
        kill -0 "${_bg_pids[-1]}" 2>/dev/null || break
        sleep 0.1
    done
    if [ -s "$tmpdir/tcp.pid" ]; then port=$p; break; fi
done
[ -n "$port" ] || { echo "$0: no nbdkit on a loopback port" >&2; exit 1; }
refuse "TCP localhost and 127.0.0.1" "nbd://localhost:$port" \
    "nbd://127.0.0.1:$port"
# localhost may resolve to ::1 instead: every loopback address is one.
if python3 -c 'import socket, sys; socket.create_connection(("::1", int(sys.argv[1])), 2)' "$port" 2>/dev/null; then
    refuse "TCP [::1] and 127.0.0.1" "nbd://[::1]:$port" "nbd://127.0.0.1:$port"
else
    echo "no IPv6 loopback here: [::1] not tried"
fi

# Unix sockets.
mkdir "$tmpdir/d"
rm -f "$tmpdir/d/a.sock" "$tmpdir/b.sock"
start_bg nbdkit -f --exit-with-parent -U "$tmpdir/d/a.sock" file "$tmpdir/a"
start_bg nbdkit -f --exit-with-parent -U "$tmpdir/b.sock" file "$tmpdir/b"
for (( i = 0; i < 100; i++ )); do
    [ -S "$tmpdir/d/a.sock" ] && [ -S "$tmpdir/b.sock" ] && break
    sleep 0.1
done
ln -s d/a.sock "$tmpdir/link.sock"
u=nbd+unix:///?socket=
refuse "Unix socket PATH and DIR/./NAME" "${u}$tmpdir/d/a.sock" \
    "${u}$tmpdir/d/./a.sock"
refuse "Unix socket and a symlink to it" "${u}$tmpdir/d/a.sock" \
    "${u}$tmpdir/link.sock"

# The control: two servers are two disks.
raid_nbdkit metadata=none level=5 chunk=64K "disk=${u}$tmpdir/d/a.sock" \
    "disk=${u}$tmpdir/b.sock" "$tmpdir/local" \
    --run 'nbdsh -u "$uri" -c "assert h.get_size() > 0"'
echo "two servers on two sockets: accepted"
