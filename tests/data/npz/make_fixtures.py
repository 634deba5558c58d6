#!/usr/bin/env python3
"""Makes the .npz fixtures of tests/test_model_io.c without NumPy.

numpy_zip64.npz    what np.savez writes: stored members, each opened with
                   zipfile's force_zip64=True (zip64 extra in the local
                   header), .npy v1.0 headers padded to 64 bytes, '|i1'.
numpy_deflate.npz  what np.savez_compressed writes: the same, deflated.
zip64_full.npz     a hand-built archive with every zip64 feature a file over
                   4 GiB has: saturated sizes and offsets in the local and
                   central headers, zip64 extras, the zip64 end of central
                   directory record and locator; one member has a .npy
                   v2.0 header.  Python's zipfile reads it back (checked).

The members mix parameters copied from ../marian/transformer-tiny/model.npz
with small arrays whose values follow the formulas in test_model_io.c.
Run from this folder: python3 make_fixtures.py
"""
import struct
import zipfile
import zlib

SRC = '../marian/transformer-tiny/model.npz'
REAL = ['decoder_ff_logit_out_b', 'encoder_l1_self_Wq']


def npy(descr, shape, data, version=1):
    """NumPy's own header layout (format.py _wrap_header, ARRAY_ALIGN 64)."""
    if len(shape) == 1:
        st = '(%d,)' % shape[0]
    else:
        st = '(' + ', '.join(str(d) for d in shape) + ')'
    header = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, st)
    pre = 8 + (2 if version == 1 else 4)
    hlen = len(header) + 1
    pad = 64 - (pre + hlen) % 64
    header = (header + ' ' * pad + '\n').encode('latin1')
    if version == 1:
        head = b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header))
    else:
        head = b'\x93NUMPY\x02\x00' + struct.pack('<I', len(header))
    return head + header + data


def marian_member(z, name):
    """The data and shape of a float32 member of Marian's model.npz."""
    raw = z.read(name + '.npy')
    hlen = struct.unpack('<H', raw[8:10])[0]
    header = raw[10:10 + hlen].decode()
    shape = tuple(int(x) for x in header.split('(')[1].split(')')[0].split(',') if x.strip())
    return shape, raw[10 + hlen:]


def synthetic():
    out = []
    out.append(('f16_vec', '<f2', (7,), struct.pack('<7e', *[i * 0.5 - 1.5 for i in range(7)])))
    out.append(('i8_mat', '|i1', (3, 5), struct.pack('<15b', *[i - 7 for i in range(15)])))
    out.append(('i16_mat', '<i2', (2, 3), struct.pack('<6h', *[i * 1000 - 2500 for i in range(6)])))
    out.append(('i32_3d', '<i4', (2, 2, 3),
                struct.pack('<12i', *[i * 100000 - 5 for i in range(12)])))
    out.append(('scalar', '<f4', (), struct.pack('<f', 3.25)))
    out.append(('empty', '<f4', (0, 4), b''))
    out.append(('f64_raw', '<f8', (3,), struct.pack('<3d', 0.1, -2.0, 1e300)))
    out.append(('u8_raw', '|u1', (4,), bytes([0, 1, 128, 255])))
    return out


def members():
    z = zipfile.ZipFile(SRC)
    out = []
    for name in REAL:
        shape, data = marian_member(z, name)
        out.append((name + '.npy', npy('<f4', shape, data)))
    for name, descr, shape, data in synthetic():
        out.append((name + '.npy', npy(descr, shape, data)))
    out.append(('v2_header.npy', npy('<f4', (2, 2), struct.pack('<4f', 1, 2, 3, 4), version=2)))
    yml = z.read('special:model.yml.npy')
    hlen = struct.unpack('<H', yml[8:10])[0]
    text = yml[10 + hlen:]
    out.append(('special:model.yml.npy', npy('|i1', (len(text),), text)))
    return out


def savez(path, mems, method):
    with zipfile.ZipFile(path, 'w', compression=method) as zf:
        for name, data in mems:
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = method
            with zf.open(info, 'w', force_zip64=True) as f:
                f.write(data)


def zip64_full(path, mems):
    F32, F16 = 0xFFFFFFFF, 0xFFFF
    body, central = b'', b''
    for name, data in mems:
        nb = name.encode()
        crc = zlib.crc32(data)
        off = len(body)
        extra = struct.pack('<HHQQ', 1, 16, len(data), len(data))
        body += struct.pack('<IHHHHHIIIHH', 0x04034b50, 45, 0, 0, 0, 0, crc, F32, F32,
                            len(nb), len(extra)) + nb + extra + data
        cextra = struct.pack('<HHQQQ', 1, 24, len(data), len(data), off)
        central += struct.pack('<IHHHHHHIIIHHHHHII', 0x02014b50, 45, 45, 0, 0, 0, 0, crc, F32,
                               F32, len(nb), len(cextra), 0, 0, 0, 0, F32) + nb + cextra
    cd_off, cd_size, n = len(body), len(central), len(mems)
    eocd64 = struct.pack('<IQHHIIQQQQ', 0x06064b50, 44, 45, 45, 0, 0, n, n, cd_size, cd_off)
    loc = struct.pack('<IIQI', 0x07064b50, 0, cd_off + cd_size, 1)
    eocd = struct.pack('<IHHHHIIH', 0x06054b50, 0, 0, F16, F16, F32, F32, 0)
    with open(path, 'wb') as f:
        f.write(body + central + eocd64 + loc + eocd)
    with zipfile.ZipFile(path) as zf:  # an independent reader must accept it
        assert zf.testzip() is None
        assert [i.filename for i in zf.infolist()] == [m[0] for m in mems]


if __name__ == '__main__':
    mems = members()
    savez('numpy_zip64.npz', mems, zipfile.ZIP_STORED)
    savez('numpy_deflate.npz', mems, zipfile.ZIP_DEFLATED)
    zip64_full('zip64_full.npz', mems)
