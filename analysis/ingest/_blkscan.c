/* Binary blk_io_trace records (blktrace 1.x, version 7): walk the record chain and gather headers.
 * Built once by _native.py; called from blktrace.py through ctypes.  `swap` = the file's byte order
 * differs from this machine's.  Record: 48-byte header, pdu_len (u16) at byte 46, then pdu_len bytes. */
#include <stdint.h>
#include <string.h>

#define HDR 48

/* Offsets of every record from byte 0 into starts[0..cap).  Returns the count, or -1 - (records
 * walked before the failing one) with *err_off
 * (byte offset of the failing record) and *err_code: 1 wrong magic, 2 header cut short by the end
 * of the data, 3 payload runs past the end, 4 more records than cap. */
int64_t blk_chain(const uint8_t *buf, int64_t n, uint32_t magic, int64_t swap, int64_t *starts,
                  int64_t cap, int64_t *err_off, int64_t *err_code)
{
    int64_t pos = 0, k = 0;
    while (pos < n) {
        uint32_t m;
        uint16_t pl;
        if (pos + HDR > n) { *err_off = pos; *err_code = 2; return -1 - k; }
        memcpy(&m, buf + pos, 4);
        memcpy(&pl, buf + pos + 46, 2);
        if (swap) { m = __builtin_bswap32(m); pl = __builtin_bswap16(pl); }
        if (m != magic) { *err_off = pos; *err_code = 1; return -1 - k; }
        if (pos + HDR + pl > n) { *err_off = pos; *err_code = 3; return -1 - k; }
        if (k >= cap) { *err_off = pos; *err_code = 4; return -1 - k; }
        starts[k++] = pos;
        pos += HDR + pl;
    }
    return k;
}

/* Copy the 48-byte header of each record at starts[i] to out[48 i]. */
void blk_gather(const uint8_t *buf, const int64_t *starts, int64_t k, uint8_t *out)
{
    for (int64_t i = 0; i < k; i++)
        memcpy(out + HDR * i, buf + starts[i], HDR);
}
