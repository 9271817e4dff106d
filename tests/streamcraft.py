# streamcraft.py - build stream clone bundles by hand, well-formed or not
#
# Copyright 2026 hg-backgroundclose contributors
#
# This software may be used and distributed according to the terms of the
# GNU General Public License version 2 or any later version.
"""Stream clone bundles with whatever names, sizes, counts and headers a
test wants, for the reliability tests (hostile and malformed bundles).

- ``read_v1(data)``: the header and the (name, content) entries of a v1
  bundle written by ``hg debugcreatestreamclonebundle``: real files to
  start from.
- ``v1(entries, ...)``: a v1 bundle (``HGS1``).
- ``v2(entries, ...)``: a bundle2 with a ``stream2`` part; entries are
  (source, name, content) with source ``b's'`` (store) or ``b'c'`` (cache).
- ``v3(entries, ...)``: a bundle2 with a ``stream3-exp`` part (Mercurial
  6.4 and later; applying it needs experimental.stream-v3).

Every count, size and header field can be overridden, so that the
bundle lies about what it holds.

Usage as a script: ``streamcraft.py many COUNT FORMAT SOURCE.hg OUT.hg``
writes the files of SOURCE plus COUNT copies of one small revlog;
``streamcraft.py FORMAT SOURCE.hg OUT.hg NAME...`` writes the files of SOURCE (a v1 bundle) plus one small file per NAME
("c:NAME" for a file of the cache source; "\\0" stands for a NUL byte).
"""

import io
import struct
import sys

from mercurial import bundle2, util
from mercurial import ui as uimod

REQUIREMENTS = b'generaldelta,revlog-compression-zstd,revlogv1,sparserevlog'


def read_v1(data):
    """(requirements, [(name, content)]) of a v1 stream clone bundle"""
    fp = io.BytesIO(data)
    assert fp.read(6) == b'HGS1UN', 'not an uncompressed v1 bundle'
    filecount, _bytecount = struct.unpack('>QQ', fp.read(16))
    (reqlen,) = struct.unpack('>H', fp.read(2))
    requirements = fp.read(reqlen).rstrip(b'\0')
    entries = []
    for _ in range(filecount):
        name, size = fp.readline().rstrip(b'\n').split(b'\0')
        entries.append((name, fp.read(int(size))))
    return requirements, entries


def v1(
    entries,
    requirements=REQUIREMENTS,
    filecount=None,
    bytecount=None,
    sizes=None,
    compression=b'UN',
    truncate=None,
):
    """a v1 bundle; ``sizes`` overrides the declared size of each file,
    ``truncate`` cuts the result to that many bytes"""
    if filecount is None:
        filecount = len(entries)
    if bytecount is None:
        bytecount = sum(len(content) for _name, content in entries)
    requires = requirements + b'\0'
    out = [
        b'HGS1',
        compression,
        struct.pack('>QQ', filecount, bytecount),
        struct.pack('>H', len(requires)),
        requires,
    ]
    for index, (name, content) in enumerate(entries):
        size = len(content) if sizes is None else sizes[index]
        out.append(b'%s\0%d\n' % (name, size))
        out.append(content)
    data = b''.join(out)
    return data if truncate is None else data[:truncate]


def _uvarint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def v2_payload(entries, sizes=None):
    """the raw data of a stream2 part"""
    out = []
    for index, (source, name, content) in enumerate(entries):
        size = len(content) if sizes is None else sizes[index]
        out.append(source + _uvarint(len(name)) + _uvarint(size) + name)
        out.append(content)
    return b''.join(out)


def _bundle2(partname, payload, params, truncate):
    ui = uimod.ui.load()
    bundler = bundle2.bundle20(ui)
    part = bundler.newpart(partname, data=payload)
    for key, value in params:
        part.addparam(key, value, mandatory=True)
    data = b''.join(bundler.getchunks())
    return data if truncate is None else data[:truncate]


def v2(
    entries,
    requirements=REQUIREMENTS,
    filecount=None,
    bytecount=None,
    sizes=None,
    truncate=None,
    payload=None,
):
    """a bundle2 holding one stream2 part; ``payload`` replaces the data"""
    if filecount is None:
        filecount = b'%d' % len(entries)
    if bytecount is None:
        bytecount = b'%d' % sum(len(e[2]) for e in entries)
    if payload is None:
        payload = v2_payload(entries, sizes)
    params = [
        (b'bytecount', bytecount),
        (b'filecount', filecount),
        (b'requirements', util.urlreq.quote(requirements)),
    ]
    return _bundle2(b'stream2', payload, params, truncate)


def v3_payload(entries):
    """the raw data of a stream3-exp part: entry counts, then entries"""
    out = [_uvarint(len(entries))]
    for source, name, content in entries:
        out.append(_uvarint(1))  # one entry in this batch
        out.append(source + _uvarint(len(name)) + _uvarint(len(content)))
        out.append(name)
        out.append(content)
    return b''.join(out)


def v3(entries, requirements=REQUIREMENTS, truncate=None):
    """a bundle2 holding one stream3-exp part"""
    params = [(b'requirements', util.urlreq.quote(requirements))]
    return _bundle2(b'stream3-exp', v3_payload(entries), params, truncate)


def many(entries, count):
    """the entries of a repository's bundle, plus ``count`` copies of its
    smallest file revlog under new names (a store of any size, quickly;
    the copies are valid revlogs that no manifest refers to)"""
    name, data = min(
        (e for e in entries if e[0].startswith(b'data/')),
        key=lambda e: len(e[1]),
    )
    suffix = name[name.rindex(b'.'):]
    copies = [
        (b'data/many/d%03d/f%06d%s' % (i // 1000, i, suffix), data)
        for i in range(count)
    ]
    return entries + copies


def main(argv):
    if argv[0] == 'many':
        # streamcraft.py many COUNT FORMAT SOURCE.hg OUT.hg
        count, fmt, source, out = int(argv[1]), argv[2], argv[3], argv[4]
        with open(source, 'rb') as fp:
            requirements, entries = read_v1(fp.read())
        entries = many(entries, count)
        if fmt == 'v1':
            data = v1(entries, requirements)
        else:
            data = v2([(b's', n, c) for n, c in entries], requirements)
        with open(out, 'wb') as fp:
            fp.write(data)
        return 0
    fmt, source, out = argv[:3]
    with open(source, 'rb') as fp:
        requirements, entries = read_v1(fp.read())
    extra = [name.encode('utf-8', 'surrogateescape') for name in argv[3:]]
    extra = [name.replace(b'\\0', b'\0') for name in extra]
    if fmt == 'v1':
        data = v1(entries + [(n, b'x') for n in extra], requirements)
    else:
        tagged = [(b's', n, c) for n, c in entries]
        # "c:NAME" is a file of the cache source (v2, v3), the rest store
        tagged += [
            (b'c', n[2:], b'x') if n.startswith(b'c:') else (b's', n, b'x')
            for n in extra
        ]
        data = (v2 if fmt == 'v2' else v3)(tagged, requirements)
    with open(out, 'wb') as fp:
        fp.write(data)
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
