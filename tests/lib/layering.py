#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
# Description: the plugin's files call each other in one direction only.
#
# Reads the symbol tables of the built objects (nm of the plugin's
# convenience library, plugin/.libs/libraid.a, and of raid.o), draws the
# file-level graph (A -> B: A uses a symbol B defines), prints it, and
# fails on any cycle, on any edge against the order below, and on any
# plugin file the order does not place.  Static functions and inline
# functions in headers leave no symbols, so what is seen is exactly the
# calls (and data references) between files.
#
# The order, lowest first (README.md's layout table says what each file
# is).  A file may use files of lower layers only: never one of its own
# layer or above.  libparity (parity/) is below everything.

import collections
import subprocess
import sys

LAYERS = [
    ["libparity"],
    ["md_badblocks"],
    ["geometry", "member", "md_bitmap_super", "control_command", "watcher",
     "nbdkit_cmdline"],
    ["member_nbd_connect", "member_file_claim"],
    ["member_file", "member_nbd", "md_super", "signature"],
    ["member_table", "params", "md_identity"],
    ["stripe_cache", "md_bitmap", "missed_rows", "extents", "md_bblog"],
    ["stripe_recover", "md_array", "md_admit", "md_create"],
    ["stripe_write", "stripe_scrub", "row_record", "md_assemble"],
    ["array"],
    ["admission"],
    ["jobs"],
    ["control", "readd_auto", "spare_auto"],
    ["raid"],
]
RANK = {f: r for r, layer in enumerate(LAYERS) for f in layer}
# Objects of the convenience library that are libparity's, not plugin
# files: the members of parity/.libs/libparity.a (main() fills it in).
PARITY_OBJECTS = set()


def file_of(obj):
    if obj in PARITY_OBJECTS:
        return "libparity"
    return obj[:-2] if obj.endswith(".o") else obj


def symbols(paths):
    """{file: (defined, undefined)} from nm -A."""
    out = subprocess.run(["nm", "-A"] + paths, check=True,
                         capture_output=True, text=True).stdout
    table = collections.defaultdict(lambda: (set(), set()))
    for line in out.splitlines():
        where, _, rest = line.rpartition(":")
        obj = where.rsplit(":", 1)[-1].rsplit("/", 1)[-1]
        fields = rest.split()
        if len(fields) == 2 and fields[0] == "U":
            table[file_of(obj)][1].add(fields[1])
        elif len(fields) == 3 and fields[1] in "TDBRCVWGSI" and \
                fields[1].isupper():
            table[file_of(obj)][0].add(fields[2])
    return table


def main(libraid, raid_o, libparity):
    PARITY_OBJECTS.update(subprocess.run(["ar", "t", libparity], check=True,
                                         capture_output=True,
                                         text=True).stdout.split())
    table = symbols([libraid, raid_o])
    owner = {}
    for f, (defined, _) in table.items():
        for s in defined:
            owner[s] = f
    edges = collections.defaultdict(lambda: collections.defaultdict(set))
    for f, (_, undefined) in table.items():
        for s in undefined:
            g = owner.get(s)
            if g is not None and g != f:
                edges[f][g].add(s)

    bad = []
    unplaced = sorted(f for f in table if f not in RANK)
    for f in unplaced:
        bad.append("%s: not in the layer order (tests/lib/layering.py)" % f)

    print("The plugin's file graph (A -> B: A uses B), by layer:")
    for r, layer in reversed(list(enumerate(LAYERS))):
        for f in layer:
            if f not in table:
                continue
            outs = sorted(edges[f], key=lambda g: (-RANK.get(g, 99), g))
            print("  %-2d %-18s -> %s" % (r, f, " ".join(outs) or "-"))
            for g in outs:
                if RANK.get(g, 99) >= RANK[f]:
                    bad.append("%s -> %s (%s) goes against the order"
                               % (f, g, ", ".join(sorted(edges[f][g]))))

    # Any cycle, whatever the order says.
    state = {}

    def visit(f, path):
        state[f] = 1
        for g in edges[f]:
            if state.get(g) == 1:
                cyc = path[path.index(g):] + [g]
                bad.append("cycle: " + " -> ".join(cyc))
            elif g not in state:
                visit(g, path + [g])
        state[f] = 2

    for f in sorted(table):
        if f not in state:
            visit(f, [f])

    for b in bad:
        print("FAIL: " + b)
    if not bad:
        print("ok: no cycle, every edge goes down the order")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], sys.argv[3]))
