# SPDX-License-Identifier: BSD-3-Clause
"""mdsb: md version-1 superblocks (v1.0, v1.1, v1.2) and internal
write-intent bitmaps, read and changed independently of the plugin.

The offsets are those of struct mdp_superblock_1 (include/uapi/linux/raid/
md_p.h) and bitmap_super_t (drivers/md/md-bitmap.h); the checksum is the
kernel's calc_sb_1_csum().  Where the superblock lies is md's rule
(super_1_load): v1.2 4 KiB from the start, v1.1 at the start, v1.0 at
the member's sectors less 16 rounded down to 8 (8 to 12 KiB before the
end); a place holds one if it has the magic, major version 1 and a
super_offset naming that place.  read() finds it in whichever place holds
one ('version' says which, 'at' the byte offset), and fails if two do.  Nothing here shares code with the plugin's
md_super/md_bitmap code, so the tests that use it judge what the plugin
wrote by md's rules, not by the plugin's own.

As a module:
    sb = mdsb.read(path)              # dict of fields, dev_roles included
    sb = mdsb.read(path, '1.0')       # only that version's place
    problems = mdsb.check(sb)         # [] if md would accept it
    mdsb.change(path, events=5, ...)  # set fields, re-seal the checksum
    bm = mdsb.read_bitmap(path, sb)   # the bitmap: header, area, bits set
    mdsb.change_bitmap(path, state=2) # set bitmap superblock fields

As a program (for shell tests):
    mdsb.py get FILE FIELD...         print the fields on one line
                                      (version: 1.0, 1.1 or 1.2; at: the
                                      superblock's byte offset)
    mdsb.py set FILE FIELD=VALUE...   change them and re-seal
                                      (dev_roles[I]=VALUE: one entry)
    mdsb.py check FILE...             exit 1 naming what md would refuse
    mdsb.py wait-clean FILE [SECONDS] until its superblock says clean
                                      (resync_offset all ones; default
                                      10 s), else exit 1 saying so
"""

import os
import struct
import sys
import time

SB_BYTES = 4096
MAGIC = 0xa92b4efc
CLEAN = (1 << 64) - 1    # resync_offset of a clean array
ROLE_SPARE = 0xffff
ROLE_FAULTY = 0xfffe
MAX_DEV = 384           # mdadm writes at most this many dev_roles entries

FIELDS = {
    'magic': (0, '<I'), 'major_version': (4, '<I'), 'feature_map': (8, '<I'),
    'set_uuid': (16, '16s'), 'ctime': (64, '<Q'), 'level': (72, '<i'),
    'layout': (76, '<I'), 'size': (80, '<Q'), 'chunksize': (88, '<I'),
    'raid_disks': (92, '<I'), 'bitmap_offset': (96, '<i'),
    'data_offset': (128, '<Q'), 'data_size': (136, '<Q'),
    'super_offset': (144, '<Q'), 'recovery_offset': (152, '<Q'),
    'dev_number': (160, '<I'), 'device_uuid': (168, '16s'),
    'utime': (192, '<Q'), 'events': (200, '<Q'), 'resync_offset': (208, '<Q'),
    'sb_csum': (216, '<I'), 'max_dev': (220, '<I'),
    'logical_block_size': (224, '<I'),
}


def csum(raw):
    """The kernel's calc_sb_1_csum() of a superblock's bytes."""
    max_dev = struct.unpack_from('<I', raw, 220)[0]
    size = min(256 + 2 * max_dev, SB_BYTES)
    b = bytearray(raw[:size])
    b[216:220] = bytes(4)
    total = sum(struct.unpack_from('<%dI' % (size // 4), b))
    if size % 4:
        total += struct.unpack_from('<H', b, size - 2)[0]
    return ((total & 0xffffffff) + (total >> 32)) & 0xffffffff


def place(version, size):
    """Where md puts a superblock of version '1.0', '1.1' or '1.2' on a
    member of size bytes (None if too small to hold one there)."""
    sectors = size // 512
    if version == '1.2':
        return 4096 if size >= 8192 else None
    if version == '1.1':
        return 0 if size >= 4096 else None
    assert version == '1.0', version
    return ((sectors - 16) & ~7) * 512 if sectors >= 32 else None


class TwoSuperblocks(Exception):
    """A member holds superblocks in two places."""


def find(path, version=None):
    """(version, offset) of the member's superblock, or (None, None);
    TwoSuperblocks if two places hold one."""
    with open(path, 'rb') as f:
        size = f.seek(0, 2)
        found = []
        for v in ([version] if version else ['1.2', '1.1', '1.0']):
            at = place(v, size)
            if at is None:
                continue
            f.seek(at)
            raw = f.read(SB_BYTES)
            magic, major = struct.unpack_from('<II', raw, 0)
            if (magic == MAGIC and major == 1 and
                    struct.unpack_from('<Q', raw, 144)[0] == at // 512):
                found.append((v, at))
    if len(found) > 1:
        raise TwoSuperblocks('%s: superblocks of v%s and v%s'
                             % (path, found[0][0], found[1][0]))
    return found[0] if found else (None, None)


def read_raw(path, version=None):
    """The member's superblock bytes, its version and its offset; the
    v1.2 place's bytes (no superblock) if no place holds one."""
    v, at = find(path, version)
    if at is None:
        v, at = version, place(version or '1.2', os.path.getsize(path))
    with open(path, 'rb') as f:
        f.seek(at)
        return bytearray(f.read(SB_BYTES)), v, at


def parse(raw):
    sb = {name: struct.unpack_from(fmt, raw, off)[0]
          for name, (off, fmt) in FIELDS.items()}
    n = min(sb['max_dev'], (SB_BYTES - 256) // 2)
    sb['dev_roles'] = list(struct.unpack_from('<%dH' % n, raw, 256))
    sb['csum_ok'] = csum(raw) == sb['sb_csum']
    return sb


def read(path, version=None):
    raw, v, at = read_raw(path, version)
    sb = parse(raw)
    sb['version'], sb['at'] = v, at
    return sb


def role(sb):
    """The member's role by its own dev_roles, or None (spare, faulty)."""
    d = sb['dev_number']
    if d >= len(sb['dev_roles']):
        return None
    r = sb['dev_roles'][d]
    return r if r < sb['raid_disks'] else None


def check(sb):
    """What md (super_1_load / super_1_validate) would refuse, as text."""
    bad = []
    if sb['magic'] != MAGIC:
        return ['no md superblock (magic %#x)' % sb['magic']]
    if sb['major_version'] != 1:
        bad.append('major_version %d' % sb['major_version'])
    if sb['max_dev'] > MAX_DEV or 256 + 2 * sb['max_dev'] > SB_BYTES:
        bad.append('max_dev %d' % sb['max_dev'])
    if not sb['csum_ok']:
        bad.append('checksum')
    if sb.get('at') is not None and sb['super_offset'] != sb['at'] // 512:
        bad.append('super_offset %d' % sb['super_offset'])
    ds = sb['data_offset'] + sb['size']
    if sb.get('version') == '1.0':
        if ds > sb['super_offset']:
            bad.append('data (to sector %d) over the v1.0 superblock' % ds)
    elif sb['data_offset'] < sb['super_offset'] + SB_BYTES // 512:
        bad.append('data_offset %d over the superblock' % sb['data_offset'])
    if sb['dev_number'] >= sb['max_dev']:
        bad.append('dev_number %d >= max_dev %d'
                   % (sb['dev_number'], sb['max_dev']))
    roles = [r for r in sb['dev_roles'] if r < sb['raid_disks']]
    if len(roles) != len(set(roles)):
        bad.append('a role held by two dev_numbers: %r' % sb['dev_roles'])
    for r in sb['dev_roles']:
        if r >= sb['raid_disks'] and r not in (ROLE_SPARE, ROLE_FAULTY):
            bad.append('dev_roles entry %#x' % r)
            break
    return bad


def change(path, version=None, **fields):
    """Set fields (dev_roles: a list) and re-seal the checksum."""
    raw, _, at = read_raw(path, version)
    for name, value in fields.items():
        if name == 'dev_roles':
            for i, r in enumerate(value):
                struct.pack_into('<H', raw, 256 + 2 * i, r)
            continue
        off, fmt = FIELDS[name]
        struct.pack_into(fmt, raw, off, value)
    struct.pack_into('<I', raw, 216, csum(raw))
    with open(path, 'r+b') as f:
        f.seek(at)
        f.write(raw)


# The internal bitmap: a 256-byte bitmap_super_t at bitmap_offset (in
# sectors, from the superblock), then one bit per bitmap chunk of the
# array's per-member size, the area padded to 4 KiB.
BITMAP_MAGIC = 0x6d746962
BITMAP_HEADER = 256
BITMAP_FIELDS = {
    'magic': (0, '<I'), 'version': (4, '<I'), 'uuid': (8, '16s'),
    'events': (24, '<Q'), 'events_cleared': (32, '<Q'),
    'sync_size': (40, '<Q'), 'state': (48, '<I'), 'chunksize': (52, '<I'),
    'daemon_sleep': (56, '<I'), 'write_behind': (60, '<I'),
    'nodes': (68, '<I'), 'cluster_name': (72, '64s'),
}
FEATURE_BITMAP = 1


def bitmap_start(sb):
    """The file offset of the member's bitmap, or None without one."""
    if not sb['feature_map'] & FEATURE_BITMAP:
        return None
    return sb['super_offset'] * 512 + sb['bitmap_offset'] * 512


def read_bitmap(path, sb=None):
    """The member's bitmap, or None: its header fields, and 'area' (the
    bytes from the header to the end of the 4 KiB-padded bits), 'nbits'
    (as many as the array's size needs), 'start', 'end' (file offsets of
    the area) and 'bits' (every bit set in the area, also past nbits: a
    stray write)."""
    sb = sb or read(path)
    start = bitmap_start(sb)
    if start is None:
        return None
    with open(path, 'rb') as f:
        f.seek(start)
        header = f.read(BITMAP_HEADER)
        bm = {name: struct.unpack_from(fmt, header, off)[0]
              for name, (off, fmt) in BITMAP_FIELDS.items()}
        chunk = bm['chunksize'] or 1
        nbits = -(-sb['size'] * 512 // chunk)
        end = start + -(-(BITMAP_HEADER + -(-nbits // 8)) // 4096) * 4096
        f.seek(start)
        area = f.read(end - start)
    bm.update(area=area, nbits=nbits, start=start, end=end,
              bits={i for i in range((len(area) - BITMAP_HEADER) * 8)
                    if area[BITMAP_HEADER + i // 8] >> (i % 8) & 1})
    return bm


def change_bitmap(path, **fields):
    """Set fields of the member's bitmap superblock in place."""
    start = bitmap_start(read(path))
    assert start is not None, '%s has no bitmap to change' % path
    with open(path, 'r+b') as f:
        for name, value in fields.items():
            off, fmt = BITMAP_FIELDS[name]
            f.seek(start + off)
            f.write(struct.pack(fmt, value))


def main(argv):
    op = argv[1]
    if op == 'get':
        sb = read(argv[2])
        print(*(sb[name].hex() if isinstance(sb[name], bytes) else sb[name]
                for name in argv[3:]))
    elif op == 'set':
        # FIELD=VALUE, or dev_roles[I]=VALUE for one entry.
        fields, roles = {}, read(argv[2])['dev_roles']
        for k, v in (a.split('=', 1) for a in argv[3:]):
            if k.startswith('dev_roles['):
                i = int(k[len('dev_roles['):-1])
                roles += [ROLE_SPARE] * (i + 1 - len(roles))
                roles[i] = int(v, 0)
                fields['dev_roles'] = roles
            else:
                fields[k] = int(v, 0)
        change(argv[2], **fields)
    elif op == 'wait-clean':
        end = time.monotonic() + (float(argv[3]) if len(argv) > 3 else 10)
        while read(argv[2])['resync_offset'] != CLEAN:
            if time.monotonic() > end:
                print('%s: the superblock is still not clean after %s s'
                      % (argv[2], argv[3] if len(argv) > 3 else 10),
                      file=sys.stderr)
                return 1
            time.sleep(0.1)
    elif op == 'check':
        status = 0
        for path in argv[2:]:
            for problem in check(read(path)):
                print('%s: %s' % (path, problem))
                status = 1
        return status
    else:
        raise SystemExit('mdsb.py: unknown operation %r' % op)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
