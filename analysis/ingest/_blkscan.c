/* Binary blk_io_trace records (blktrace 1.x, version 7): walk the record chain, gather headers, and
 * decode the event records into columns (blk_events).
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

static inline uint64_t rd64(const uint8_t *p, int64_t swap) { uint64_t v; memcpy(&v, p, 8); return swap ? __builtin_bswap64(v) : v; }
static inline uint32_t rd32(const uint8_t *p, int64_t swap) { uint32_t v; memcpy(&v, p, 4); return swap ? __builtin_bswap32(v) : v; }
static inline uint16_t rd16(const uint8_t *p, int64_t swap) { uint16_t v; memcpy(&v, p, 2); return swap ? __builtin_bswap16(v) : v; }

#define NOTIFY 0x400
#define MAX_NOTIFY_DEVS 64
#define MAX_KEYS 1024

/* One pass over the records at starts[0..k) of one block: the event records (notify bit 0x400 of the
 * category clear) go, in file order, to the int64 columns col[0..7) = time sector bytes action pid
 * device error; notify records are only counted and summarised.  Resumable: what carries from block to
 * block is in stats, ndev, key and latest (the caller sets stats[1] = INT64_MAX, stats[2] = INT64_MIN
 * and the rest 0 before the first block).  Returns the number of event records of this block, or -1
 * with stats[5] = what stopped it at record stats[6]: 1 an unknown action (an event code outside 1..17,
 * a notify code above 2); 2 an event more than back_ns before the latest earlier event of its (device,
 * CPU) (stats[7] = that latest time); 3 more (device, CPU) pairs or notify devices than tracked here.
 * stats: [0] notify records so far, [1] min and [2] max time over all records so far (as int64),
 * [3] process-name records of this block (notify code 0 with a payload; their indices in proc[]),
 * [4] distinct devices of notify records so far (in ndev[0..64)), [8] (device, CPU) keys so far (in
 * key[0..1024) with each one's latest time in latest[]). */
int64_t blk_events(const uint8_t *buf, const int64_t *starts, int64_t k, int64_t swap, int64_t **col,
                   int64_t back_ns, int64_t *proc, int64_t *stats, int64_t *ndev, uint64_t *key,
                   int64_t *latest)
{
    int64_t j = 0, nn = stats[0], np_ = 0, nd = stats[4], nk = stats[8], tmin = stats[1], tmax = stats[2];
    for (int64_t i = 0; i < k; i++) {
        const uint8_t *r = buf + starts[i];
        int64_t t = (int64_t)rd64(r + 8, swap);
        uint32_t act = rd32(r + 28, swap);
        uint32_t code = act & 0xFF, cat = act >> 16;
        uint32_t dev = rd32(r + 36, swap);
        if (t < tmin) tmin = t;
        if (t > tmax) tmax = t;
        if (cat & NOTIFY) {
            if (code > 2) { stats[5] = 1; stats[6] = i; return -1; }
            nn++;
            if (code == 0 && rd16(r + 46, swap) > 0) proc[np_++] = i;
            int64_t s = 0;
            while (s < nd && ndev[s] != dev) s++;
            if (s == nd) {
                if (nd == MAX_NOTIFY_DEVS) { stats[5] = 3; stats[6] = i; return -1; }
                ndev[nd++] = dev;
            }
            continue;
        }
        if (code < 1 || code > 17) { stats[5] = 1; stats[6] = i; return -1; }
        uint64_t kk = ((uint64_t)dev << 32) | rd32(r + 40, swap);
        int64_t s = 0;
        while (s < nk && key[s] != kk) s++;
        if (s == nk) {
            if (nk == MAX_KEYS) { stats[5] = 3; stats[6] = i; return -1; }
            key[nk] = kk; latest[nk++] = t;
        } else if (latest[s] - t > back_ns) {
            stats[5] = 2; stats[6] = i; stats[7] = latest[s]; return -1;
        } else if (t > latest[s]) {
            latest[s] = t;
        }
        col[0][j] = t;
        col[1][j] = (int64_t)rd64(r + 16, swap);
        col[2][j] = rd32(r + 24, swap);
        col[3][j] = act;
        col[4][j] = rd32(r + 32, swap);
        col[5][j] = dev;
        col[6][j] = rd16(r + 44, swap);
        j++;
    }
    stats[0] = nn; stats[1] = tmin; stats[2] = tmax; stats[3] = np_; stats[4] = nd; stats[8] = nk;
    return j;
}

/* As-of join by integer keys (what pandas.merge_asof(left, right, on=t, by=keys) gives, as io_tables uses
 * it): for each left row i, the right row with the same nk keys whose time is the last <= lt[i]
 * (direction 0, backward; < without allow_exact) or the first >= lt[i] (direction 1, forward; > without
 * allow_exact), -1 when none.  Ties in time go as merge_asof breaks them over right rows stably sorted by
 * time: backward the last (the highest row index), forward the first (the lowest).  rorder: the right
 * rows stably sorted by time.  Keys column-major (key k of row i at keys[k * n + i]).  Work arrays:
 * table (cap slots, cap a power of two >= 2 * nr), gid (nr), start (nr + 1), rows (nr).  Returns 0, or
 * -1 when cap is too small. */
static inline uint64_t key_hash(const int64_t *keys, int64_t n, int64_t nk, int64_t i)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL;
    for (int64_t k = 0; k < nk; k++) {
        h ^= (uint64_t)keys[k * n + i];
        h *= 0xBF58476D1CE4E5B9ULL;
        h ^= h >> 31;
    }
    return h;
}

static inline int same_key(const int64_t *a, int64_t na, int64_t i, const int64_t *b, int64_t nb, int64_t j,
                           int64_t nk)
{
    for (int64_t k = 0; k < nk; k++)
        if (a[k * na + i] != b[k * nb + j]) return 0;
    return 1;
}

int64_t blk_asof(int64_t nl, const int64_t *lkeys, const int64_t *lt, int64_t nr, const int64_t *rkeys,
                 const int64_t *rt, const int64_t *rorder, int64_t nk, int64_t direction, int64_t allow_exact,
                 int64_t cap, int64_t *table, int64_t *gid, int64_t *start, int64_t *rows, int64_t *out)
{
    if (cap < 2 * nr || (cap & (cap - 1))) return -1;
    for (int64_t s = 0; s < cap; s++) table[s] = -1;      /* slot -> a right row of its key (the first seen) */
    int64_t ng = 0;
    for (int64_t i = 0; i < nr; i++) {                   /* group of each right row */
        uint64_t s = key_hash(rkeys, nr, nk, i) & (uint64_t)(cap - 1);
        while (table[s] >= 0 && !same_key(rkeys, nr, i, rkeys, nr, table[s], nk)) s = (s + 1) & (uint64_t)(cap - 1);
        if (table[s] < 0) { table[s] = i; gid[i] = ng++; }
        else gid[i] = gid[table[s]];
    }
    for (int64_t g = 0; g <= ng; g++) start[g] = 0;      /* counting sort of rorder by group: time order kept */
    for (int64_t i = 0; i < nr; i++) start[gid[i] + 1]++;
    for (int64_t g = 0; g < ng; g++) start[g + 1] += start[g];
    for (int64_t j = 0; j < nr; j++) { int64_t r = rorder[j]; rows[start[gid[r]]++] = r; }
    for (int64_t g = ng; g > 0; g--) start[g] = start[g - 1];
    start[0] = 0;
    for (int64_t i = 0; i < nl; i++) {
        uint64_t s = key_hash(lkeys, nl, nk, i) & (uint64_t)(cap - 1);
        while (table[s] >= 0 && !same_key(lkeys, nl, i, rkeys, nr, table[s], nk)) s = (s + 1) & (uint64_t)(cap - 1);
        if (table[s] < 0) { out[i] = -1; continue; }
        int64_t g = gid[table[s]], lo = start[g], hi = start[g + 1], t = lt[i];
        /* upper: first position with rt > t (or >= t for lower) */
        int upper = direction == 0 ? allow_exact != 0 : allow_exact == 0;
        int64_t a = lo, b = hi;
        while (a < b) {
            int64_t m = a + (b - a) / 2;
            int64_t v = rt[rows[m]];
            if (upper ? v <= t : v < t) a = m + 1; else b = m;
        }
        if (direction == 0) out[i] = a > lo ? rows[a - 1] : -1;
        else out[i] = a < hi ? rows[a] : -1;
    }
    return 0;
}
