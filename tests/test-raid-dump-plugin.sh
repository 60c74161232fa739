#!/usr/bin/env bash
# nbdkit --dump-plugin and --help: the plugin names its parity
# implementation (one of the ones it lists) and its io_uring features, and
# --help documents every parameter.  Then every listed implementation is
# forced with parity=NAME and must produce parity that the independent
# checker accepts (or refuse clearly because this CPU cannot run it).

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires truncate
requires_python_module nbd

nbdkit "$RAID_PLUGIN" --dump-plugin > "$tmpdir/dump"
cat "$tmpdir/dump"

grep -q '^name=raid$' "$tmpdir/dump"
impl=$(sed -n 's/^raid_parity=//p' "$tmpdir/dump")
impls=$(sed -n 's/^raid_parity_impls=//p' "$tmpdir/dump")
uring=$(sed -n 's/^raid_io_uring=//p' "$tmpdir/dump")
if [ -z "$impl" ] || [ -z "$impls" ]; then
    echo "$0: --dump-plugin lacks raid_parity= or raid_parity_impls=" >&2
    exit 1
fi
if ! grep -q '^raid_io_uring=.' "$tmpdir/dump"; then
    echo "$0: --dump-plugin lacks raid_io_uring=" >&2
    exit 1
fi
case ",$impls," in
    *",$impl,"*) ;;
    *) echo "$0: raid_parity=$impl is not in raid_parity_impls=$impls" >&2
       exit 1 ;;
esac
case ",$impls," in
    *,generic,*) ;;
    *) echo "$0: the scalar reference 'generic' is not listed: $impls" >&2
       exit 1 ;;
esac
echo "parity: $impl of $impls; io_uring: $uring"

nbdkit "$RAID_PLUGIN" --help > "$tmpdir/help"
for p in level= disk= chunk= layout= data-offset= cache= direct= parity=; do
    if ! grep -q -- "^$p" "$tmpdir/help"; then
        echo "$0: --help does not document $p" >&2
        cat "$tmpdir/help" >&2
        exit 1
    fi
done

# Every implementation, forced: full-stripe writes (syndrome generation)
# and small ones (read-modify-write), RAID-5 and RAID-6, then the checker.
# One Python process drives them all (nbdkit -s per array through
# connect_command), which keeps this quick.
test_seed
IFS=, read -r -a impl_list <<< "$impls"
python3 - "$seed" "$RAID_PLUGIN" "$tmpdir" "$top_srcdir/tests/raidcheck.py" \
    "${impl_list[@]}" <<'EOF'
import os, random, subprocess, sys
import nbd

seed, plugin, tmp, raidcheck = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
ran = 0
for name in sys.argv[5:]:
    for level in (5, 6):
        members = []
        for i in range(6):
            path = os.path.join(tmp, "p%d" % i)
            with open(path, "wb") as f:
                f.truncate(64 * 4096)
            members.append(path)
        args = [plugin, "metadata=none", "level=%d" % level, "chunk=4K",
                "layout=left-asymmetric", "parity=" + name] + members
        probe = subprocess.run(["nbdkit", "-U", "-"] + args + ["--run", "true"],
                               stderr=subprocess.PIPE, text=True)
        if probe.returncode != 0:
            if "parity=%s: this CPU cannot run it" % name in probe.stderr:
                print("parity=%s: not runnable here (said so clearly)" % name)
                break
            sys.exit("parity=%s RAID-%d: nbdkit failed:\n%s"
                     % (name, level, probe.stderr))
        h = nbd.NBD()
        h.set_strict_mode(0)
        h.connect_command(["nbdkit", "-s", "--exit-with-parent"] + args)
        rng = random.Random(seed)
        size = h.get_size()
        shadow = bytearray(size)
        for i in range(60):
            off = rng.randrange(size)
            n = min(size - off, rng.choice((1, 100, 512, 4096, 5000, 16384,
                                            20480, 70000)))
            data = rng.randbytes(n)
            h.pwrite(data, off)
            shadow[off:off + n] = data
        assert h.pread(size, 0) == shadow, \
            "parity=%s RAID-%d: read back differs" % (name, level)
        h.shutdown()
        del h
        check = subprocess.run([sys.executable, raidcheck,
                                "--level", str(level),
                                "--layout", "left-asymmetric",
                                "--chunk", "4096"] + members,
                               stdout=subprocess.DEVNULL)
        if check.returncode != 0:
            sys.exit("parity=%s RAID-%d: wrong parity on the members"
                     % (name, level))
        ran += 1
    else:
        print("parity=%s: RAID-5 and RAID-6 parity good" % name)
assert ran > 0, "no parity implementation could run"
EOF
