#!/usr/bin/env bash
# nbdkit --dump-plugin and --help: the plugin names its parity
# implementation (one of the ones it lists) and its io_uring features, and
# --help documents every parameter.  Then every listed implementation is
# forced with parity=NAME and must produce parity that the independent
# checker accepts (or refuse clearly because this CPU cannot run it).

source "${top_srcdir:-$(dirname "$0")/..}/tests/functions.sh"
requires nbdsh truncate
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
# and small ones (read-modify-write), then the checker.
test_seed
cat > "$tmpdir/writes.py" <<'EOF'
import os, random
h.set_strict_mode(0)
rng = random.Random(int(os.environ["SEED"]))
size = h.get_size()
shadow = bytearray(size)
for i in range(60):
    off = rng.randrange(size)
    n = min(size - off, rng.choice((1, 100, 512, 4096, 5000, 16384, 20480, 70000)))
    data = rng.randbytes(n)
    h.pwrite(data, off)
    shadow[off:off + n] = data
assert h.pread(size, 0) == shadow, "read back differs"
EOF
IFS=, read -r -a impl_list <<< "$impls"
ran=0
for name in "${impl_list[@]}"; do
    for level in 5 6; do
        make_members 6 $(( 64 * 4096 ))
        if ! SEED=$seed WRITES="$tmpdir/writes.py" \
             raid_nbdkit level=$level chunk=4K layout=left-asymmetric \
                 parity="$name" "${members[@]}" \
                 --run 'nbdsh -u "$uri" -c "exec(open(\"$WRITES\").read())"' \
                 2> "$tmpdir/err"; then
            if grep -q "parity=$name: this CPU cannot run it" "$tmpdir/err"; then
                echo "parity=$name: not runnable here (said so clearly)"
                break
            fi
            cat "$tmpdir/err" >&2
            echo "$0: parity=$name RAID-$level failed" >&2
            exit 1
        fi
        raidcheck --level $level --layout left-asymmetric --chunk 4096 \
            "${members[@]}" > /dev/null || {
            echo "$0: parity=$name RAID-$level: wrong parity on the members" >&2
            exit 1
        }
        ran=$((ran + 1))
    done
    echo "parity=$name: RAID-5 and RAID-6 parity good"
done
[ $ran -gt 0 ]
