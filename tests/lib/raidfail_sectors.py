# SPDX-License-Identifier: BSD-3-Clause
"""raidfail_sectors: what the randomized test (raidfail_random.py) knows
about its members' bad sectors in the "sector-errors" mix, and the rule
that keeps every page of the array recoverable.

Members that get bad sectors are "badsector" members (faults.py): their
server fails the sectors its ranges file lists (Member.bad, one line per
fault, "START LENGTH MODE # SERIAL" in sectors), and appends the sectors
a write mended to its healed file ("START LENGTH LINE", LINE the fault's
text, so the serial says which fault).

Which pages (4 KiB, counted by member offset: the same page of a row on
every member is one page-row) a member may be unable to give:

  read-bad   pages holding a sector of a "read" fault that the server
             lists now and has not seen mended: the healed file is the
             truth, and a mended sector stays readable until its fault is
             taken away (a fault added again is a new line).
  written    every page that a "write" or "both" fault touches, added
             since the member came (a replacement starts empty) or since
             the last heal: a write there may have failed, and md's
             bad-block log then lists that page (the plugin writes a
             failed member write again 4 KiB at a time and records only
             the pages that still fail, as md records a stripe's pages),
             never read again until a write over it succeeds.  Whether a
             write did reach the page while the fault was there depends on
             the client's writes and on background rebuilds, scrubs and
             read corrections, which the model does not follow: "may" is
             the most it can say.  Also the pages of a "read" fault added
             while a job runs over pages of an earlier one: the job may be
             reading back a page it has just rewritten, and the read
             fails; md lists such a page (or fails a member without a
             log).  Taking the fault away does not take the
             page off the log, so only a heal (the pages written again
             with the faults gone, then every log seen empty) clears this.

A member that is not in sync (failed, doomed, rebuilding, ...) cannot
give any page.  The rule (`worst`): on every page-row, the members that
are not in sync or may not give that page number at most the tolerance.
Faults are only added, and members only made unsafe, where the rule
still holds afterwards; so no page may be lost, status must list
nothing lost, and every byte must read as the shadow.  Over-estimating a
member's bad pages only makes the test add fewer faults and fail fewer
members: it never lets a loss pass.
"""

import collections

PAGE, SECTOR = 4096, 512


def parse_line(line):
    """Member.bad's line -> (first sector, sectors, mode, serial)."""
    text, _, serial = line.partition("#")
    start, n, mode = text.split()
    return int(start), int(n), mode, int(serial)


def pages_of(start, n):
    """The pages that sectors [start, start + n) touch."""
    return set(range(start * SECTOR // PAGE,
                     ((start + n) * SECTOR - 1) // PAGE + 1))


def healed_sectors(m):
    """{serial: set of sectors} that the server of m has seen mended."""
    got = collections.defaultdict(set)
    try:
        with open(m.healed_file) as f:
            lines = f.read().splitlines()
    except (FileNotFoundError, AttributeError):
        return got
    for line in lines:
        if not line:
            continue
        start, n, rest = line.split(None, 2)
        serial = int(rest.partition("#")[2])
        got[serial].update(range(int(start), int(start) + int(n)))
    return got


def mended_lines(m):
    """m's "read" faults that writes have mended whole."""
    healed = healed_sectors(m)
    return [line for line in getattr(m, "bad", [])
            for start, n, mode, serial in [parse_line(line)]
            if mode == "read" and
            healed[serial] >= set(range(start, start + n))]


def read_bad_sectors(m):
    """Sectors of m's "read" faults not mended: {sector}."""
    if not getattr(m, "bad", None):
        return set()
    healed = healed_sectors(m)
    bad = set()
    for line in m.bad:
        start, n, mode, serial = parse_line(line)
        if mode == "read":
            bad.update(s for s in range(start, start + n)
                       if s not in healed[serial])
    return bad


class SectorModel:
    def __init__(self, n, tol):
        self.tol = tol
        self.written = [set() for _ in range(n)]

    def reset(self, i):
        """Member i is a new disk (a replacement): no bad page, no log."""
        self.written[i] = set()

    def bad_pages(self, i, m):
        """The pages member i (object m) may be unable to give."""
        return {s * SECTOR // PAGE for s in read_bad_sectors(m)} | \
            self.written[i]

    def holders(self, members):
        """{page: set of members that may be unable to give it}."""
        h = collections.defaultdict(set)
        for i, m in enumerate(members):
            for p in self.bad_pages(i, m):
                h[p].add(i)
        return h

    def worst(self, unsafe, members, extra=None):
        """The most members that may not give one page-row: unsafe (a
        set) on every page, plus the holders of the page; extra: (member,
        pages) to count as well."""
        h = self.holders(members)
        if extra:
            for p in extra[1]:
                h[p].add(extra[0])
        return len(unsafe) + max([len(s - unsafe) for s in h.values()],
                                 default=0)

    def can_make_unsafe(self, j, unsafe, members):
        """Whether member j may fail (or be doomed) under the rule."""
        return self.worst(unsafe | {j}, members) <= self.tol

    def can_add(self, i, pages, unsafe, members, doom):
        """Whether a fault over pages may go on member i; doom: it makes
        member i unsafe too (a write fault where no log can record it)."""
        return self.worst(unsafe | ({i} if doom else set()), members,
                          (i, pages)) <= self.tol

    def describe(self, members):
        return {i: sorted(p) for i, p in
                ((i, self.bad_pages(i, m)) for i, m in enumerate(members))
                if p}


def lines_of(m):
    return [parse_line(line) for line in getattr(m, "bad", [])]


def unmended_outside(m, written):
    """Sectors of m's "read" faults not mended that lie outside the pages
    written (which a log may list, and a read then never touches)."""
    return sorted(s for s in read_bad_sectors(m)
                  if s * SECTOR // PAGE not in written)


def both_pages(m):
    """Pages of m's "both" faults (unreadable and unwritable)."""
    pages = set()
    for start, n, mode, _ in lines_of(m):
        if mode == "both":
            pages |= pages_of(start, n)
    return pages
