#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-3-Clause
# What the control socket takes from its clients and gives them:
#   - a command line over 4,095 bytes is refused whole and does nothing
#     (it used to run cut at 4,095 bytes: "fail 1" and 5,000 spaces and
#     "junk" failed member 1); 4,095 bytes and the newline still work;
#   - a member whose name is not UTF-8: status is valid JSON and valid
#     UTF-8 (U+FFFD for each stray byte), nbdkit-raid-ctl show prints it
#     (it used to die on the reply), and the client copes with a reply
#     that is not UTF-8 (a fake socket's) without printing escapes;
#   - the socket is mode 0600, as the man page says (it was 0700).

source "${top_srcdir:-$(dirname "$0")/..}/tests/lib/functions.sh"
ctl_tool=$top_srcdir/tools/nbdkit-raid-ctl
ctl () { python3 "$ctl_tool" "$tmpdir/ctl" "$@"; }
# send LINE: the reply to LINE sent as it is (no newline added).
send () {
    python3 - "$tmpdir/ctl" "$1" <<'PY'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(10)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode())
out = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            break
        out += b
except ConnectionResetError:
    out += b" (connection reset)"
sys.stdout.write(out.decode("utf-8", "replace"))
PY
}
states () { ctl status | python3 -c 'import json,sys; print(" ".join(m["state"] for m in json.load(sys.stdin)["members"]))'; }

make_members 4 2M
odd=$tmpdir/$'odd\xff\xfename\xc3'
mv "${members[2]}" "$odd"
members[2]=$odd
start_nbdkit "$tmpdir/sock" metadata=none level=5 chunk=4K \
    control="$tmpdir/ctl" "${members[@]}"

mode=$(stat -c %a "$tmpdir/ctl")
if [ "$mode" != 600 ]; then
    fail "the control socket is mode $mode, not 600"
fi

long="fail 1$(printf '%5000s' '') junk"$'\n'
reply=$(send "$long")
case "$reply" in
    error:*long*) echo "ok: a ${#long}-byte line: $reply" ;;
    *) fail "a ${#long}-byte line was answered '$reply'" ;;
esac
if [ "$(states)" != "in_sync in_sync in_sync in_sync" ]; then
    fail "the refused long line changed the members: $(states)"
fi
line="status$(printf '%4089s' '')"
[ ${#line} = 4095 ] || { echo "test bug: ${#line}"; exit 1; }
reply=$(send "$line"$'\n')
case "$reply" in
    '{'*) echo "ok: a 4,095-byte line is served" ;;
    *) fail "a 4,095-byte status line was answered '${reply:0:80}'" ;;
esac

# The plugin's JSON must be strict UTF-8 and name the member with U+FFFD.
if ! name=$(send status$'\n' | python3 -c '
import json, sys
raw = sys.stdin.buffer.read()
print(json.loads(raw.decode("utf-8", "strict"))["members"][2]["name"])'); then
    fail "status with a non-UTF-8 member name is not UTF-8 JSON"
elif [ "$name" != "$tmpdir/odd"$'\xef\xbf\xbd\xef\xbf\xbd'name$'\xef\xbf\xbd' ]; then
    fail "the member's name came out as '$name'"
else
    echo "ok: status names it $name"
fi
if ! out=$(ctl show 2>&1); then
    fail "nbdkit-raid-ctl show failed: $out"
elif ! grep -q "odd.*name" <<<"$out"; then
    fail "nbdkit-raid-ctl show does not list the member: $out"
else
    echo "ok: nbdkit-raid-ctl show lists it"
fi

# The client must not die on a reply that is not UTF-8 either (an older
# plugin's): a fake control socket answers status with raw bytes.
python3 - "$tmpdir/fake" "$(ctl status)" <<'PY' &
import json, os, socket, sys
st = json.loads(sys.argv[2])
st["members"][2]["name"] = "@ODD@"
reply = json.dumps(st).encode().replace(b"@ODD@", b"odd\xff\xfe\\u001b[31mname\xc3")
s = socket.socket(socket.AF_UNIX)
s.bind(sys.argv[1] + ".tmp")
os.rename(sys.argv[1] + ".tmp", sys.argv[1])
s.listen(4)
for _ in range(2):
    c, _ = s.accept()
    c.recv(4096)
    c.sendall(reply)
    c.close()
PY
_bg_pids+=($!)
for _ in $(seq 50); do [ -S "$tmpdir/fake" ] && break; sleep 0.1; done
for cmd in show status; do
    if ! out=$(python3 "$ctl_tool" "$tmpdir/fake" $cmd 2>&1); then
        fail "nbdkit-raid-ctl $cmd dies on a reply that is not UTF-8: ${out: -200}"
    elif [ $cmd = show ] && grep -q $'\x1b' <<<"$out"; then
        fail "nbdkit-raid-ctl show prints an escape sequence from a name"
    else
        echo "ok: nbdkit-raid-ctl $cmd on a reply that is not UTF-8"
    fi
done
