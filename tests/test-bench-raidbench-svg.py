#!/usr/bin/python3
# SPDX-License-Identifier: BSD-3-Clause
"""raidbench --svg draws what it measured.  A tiny run (cache only, one
repetition of 1 ms: a check of the drawing, not a measurement) writes
its table as CSV and its charts as SVG; the SVG must be well-formed XML
with one panel per operation and mode, titled so, and in each panel one
line per implementation of the CSV, through one point per disk (source)
count, whose hover text gives the CSV's GB/s; a larger GB/s is drawn
higher and a larger count further right, and the line goes through the
points.  A path that cannot be written fails before anything is timed.
"""

import csv
import io
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

SVG = "{http://www.w3.org/2000/svg}"
top = os.environ.get("top_builddir") or \
    os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
raidbench = os.path.join(top, "bench", "raidbench")
if not os.access(raidbench, os.X_OK):
    print("SKIP: %s has not been built" % raidbench)
    sys.exit(77)

with tempfile.TemporaryDirectory(prefix="raidbench-svg.") as tmp:
    path = os.path.join(tmp, "chart.svg")
    out = subprocess.run(
        [raidbench, "--mode", "cache", "--ops", "xor,gen,check",
         "--sources", "1,3,8", "--disks", "4,8,12", "--check-disks", "6,10",
         "--time", "1", "--reps", "1", "--csv", "--svg", path],
        check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    table = "\n".join(x for x in out.splitlines() if not x.startswith("#"))
    rows = [r for r in csv.DictReader(io.StringIO(table)) if r.get("impl")
            and r["op"] in ("xor_gen", "gen_syndrome", "check")]
    root = ET.parse(path).getroot()

    want = {}                   # panel title -> {impl: [(n, gbps)]}
    for r in rows:
        title = "%s, 4 KiB per disk, %s, %s" % (r["op"], r["mode"],
                                                r["layout"])
        want.setdefault(title, {}).setdefault(r["impl"], []).append(
            (int(r["n"]), float(r["gbps"])))
    panels = root.findall(SVG + "g[@class='panel']")
    got_titles = [p.find(SVG + "text").text for p in panels]
    assert got_titles == list(want), "panels %s, expected %s" % (
        got_titles, list(want))

    for panel, title in zip(panels, got_titles):
        xname = "sources" if title.startswith("xor_gen") else "disks"
        series = panel.findall(SVG + "g[@class='series']")
        assert [s.get("data-name") for s in series] == list(want[title]), \
            "%s: lines %s, expected %s" % (
                title, [s.get("data-name") for s in series],
                list(want[title]))
        drawn = []              # (gbps, n, cx, cy) of every point
        for s in series:
            impl = s.get("data-name")
            circles = s.findall(SVG + "circle")
            points = [(float(c.get("cx")), float(c.get("cy")))
                      for c in circles]
            line = [tuple(map(float, p.split(",")))
                    for p in s.find(SVG + "polyline").get("points").split()]
            assert line == points, "%s %s: the line misses its points" % (
                title, impl)
            for c, (n, gbps) in zip(circles, want[title][impl]):
                m = re.fullmatch(r"(.+): (\d+) (\w+), ([\d.]+) GB/s",
                                 c.find(SVG + "title").text)
                assert m and m.group(1) == impl and int(m.group(2)) == n \
                    and m.group(3) == xname, (title, impl, m and m.groups())
                assert abs(float(m.group(4)) - gbps) <= 0.006, \
                    "%s %s %d: drawn %s GB/s, measured %.3f" % (
                        title, impl, n, m.group(4), gbps)
                drawn.append((gbps, n, float(c.get("cx")),
                              float(c.get("cy"))))
            assert len(circles) == len(want[title][impl]), (title, impl)
        for a in drawn:
            for b in drawn:
                # Higher, or level within the 0.1 px the SVG rounds to;
                # clearly higher when clearly faster.
                if a[0] > b[0] and (a[3] > b[3] + 0.1 or (
                        a[0] > 1.1 * b[0] + 0.1 and a[3] >= b[3])):
                    raise AssertionError("%s: %.2f GB/s drawn at y %.1f, "
                                         "%.2f at %.1f" % (title, a[0], a[3],
                                                           b[0], b[3]))
                if a[1] > b[1]:
                    assert a[2] > b[2], "%s: %d drawn left of %d" % (
                        title, a[1], b[1])
    print("ok: %d panels, %d lines, %d points match the table"
          % (len(panels), sum(len(v) for v in want.values()), len(rows)))

    r = subprocess.run([raidbench, "--svg", os.path.join(tmp, "no", "x.svg")],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       universal_newlines=True, timeout=10)
    assert r.returncode != 0 and "--svg" in r.stderr and not r.stdout, \
        "an unwritable --svg path: exit %d, %r" % (r.returncode, r.stderr)
    print("ok: an unwritable path fails at once: %s" % r.stderr.strip())
