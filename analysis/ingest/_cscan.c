/* Byte scanner for comma-separated integer tables (fio 2.x/3.x logs and histogram logs).
 *
 * Built once per machine by analysis/ingest/_native.py (cc -O3 -shared) and called through ctypes,
 * which releases the GIL, so Python threads can parse newline-aligned chunks in parallel.
 *
 * Grammar per line: ' '* int (' '* ',' ' '* int)* ' '* '\r'? '\n', exactly ncol ints, each with an
 * optional leading '-' and at most 18 digits; blank lines are skipped.  A line takes at least 2*ncol bytes with its '\n', so a chunk
 * starting at byte b holds rows >= b / (2*ncol) at most: callers give each chunk its own row range
 * from that bound and need no counting pass.  Two sinks share the one parser:
 *  - parse_rows: every field into a column-major int64 table (column c of row r at out[c*stride + r]);
 *  - parse_fio_log: a fio log line `time_ms, value, ddir, bs[, offset|prio][, prio]` into the columns
 *    the reader keeps (time and value as float64, ddir as int8, checked to be 0-3) plus aggregates of
 *    the rest (bs min/max, column-5 max), so a 5M-line log needs 17 B/line instead of 40-48.
 */
#include <stdint.h>

enum { ERR_CHAR = 1, ERR_COLS = 2, ERR_LONG = 3, ERR_ROWS = 4, ERR_DDIR = 5 };

typedef struct {
    int64_t *table;                 /* parse_rows: column c of row r at table[c * stride + r] */
    int64_t stride;
    double *t, *v;                  /* parse_fio_log */
    int8_t *ddir;
    int64_t *agg;                   /* [bs_min, bs_max, col5_max, rows with ddir 0, 1, 2, 3] */
} sink_t;

/* Store field c of row r; returns an error code or 0. */
static inline int store(const sink_t *s, int64_t c, int64_t r, int64_t x)
{
    if (s->table) {
        s->table[c * s->stride + r] = x;
        return 0;
    }
    switch (c) {
    case 0: s->t[r] = (double)x; break;
    case 1: s->v[r] = (double)x; break;
    case 2:
        if (x < 0 || x > 3) return ERR_DDIR;
        s->ddir[r] = (int8_t)x;
        s->agg[3 + x]++;
        break;
    case 3:
        if (x < s->agg[0]) s->agg[0] = x;
        if (x > s->agg[1]) s->agg[1] = x;
        break;
    case 4:
        if (x > s->agg[2]) s->agg[2] = x;
        break;
    default: break;
    }
    return 0;
}

/* Parse the lines of buf[start:end) field by field.  Returns rows parsed; on bad input sets *err_off
 * to the byte offset of the offending byte (end for a bad last line) and *err_code; otherwise
 * *err_off = -1 and *err_code = 0.  Spaces may stand before and after a field, before '-'. */
static int64_t scan(const uint8_t *buf, int64_t start, int64_t end, int64_t ncol, const sink_t *s,
                    int64_t row0, int64_t row_limit, int64_t *err_off, int64_t *err_code)
{
    int64_t r = row0, i = start;
    int e;
#define FAIL(code) do { *err_off = i; *err_code = (code); return r - row0; } while (0)
    *err_off = -1;
    *err_code = 0;
    while (i < end) {
        /* a blank line (spaces, then "\n" or "\r\n") is skipped */
        int64_t j = i;
        while (j < end && buf[j] == ' ') j++;
        if (j >= end) { i = end; break; }
        if (buf[j] == '\r') {
            if (j + 1 < end && buf[j + 1] == '\n') { i = j + 2; continue; }
            i = j;
            FAIL(ERR_CHAR);
        }
        if (buf[j] == '\n') { i = j + 1; continue; }
        i = j;
        if (r >= row_limit) FAIL(ERR_ROWS);
        for (int64_t c = 0; c < ncol; c++) {
            while (i < end && buf[i] == ' ') i++;
            int neg = 0;
            if (i < end && buf[i] == '-') { neg = 1; i++; }
            int64_t v = 0, d0 = i;
            while (i < end && (unsigned)(buf[i] - '0') < 10u) {
                if (i - d0 >= 18) FAIL(ERR_LONG);
                v = v * 10 + (buf[i] - '0');
                i++;
            }
            if (i == d0) FAIL(ERR_CHAR);
            if ((e = store(s, c, r, neg ? -v : v))) { i = d0; FAIL(e); }
            while (i < end && buf[i] == ' ') i++;
            if (c < ncol - 1) {
                if (i >= end || buf[i] == '\n' || buf[i] == '\r') FAIL(ERR_COLS);
                if (buf[i] != ',') FAIL(ERR_CHAR);
                i++;
            } else if (i < end) {
                if (buf[i] == ',') FAIL(ERR_COLS);
                if (buf[i] == '\r') {
                    if (i + 1 >= end || buf[i + 1] != '\n') FAIL(ERR_CHAR);
                    i++;
                }
                if (buf[i] != '\n') FAIL(ERR_CHAR);
                i++;
            }
        }
        r++;
    }
#undef FAIL
    return r - row0;
}

/* Every field of buf[start:end) into the column-major int64 table out (column c of row r at
 * out[c * stride + r]), rows row0 .. row_limit-1. */
int64_t parse_rows(const uint8_t *buf, int64_t start, int64_t end, int64_t ncol, int64_t *out,
                   int64_t stride, int64_t row0, int64_t row_limit, int64_t *err_off, int64_t *err_code)
{
    sink_t s = {out, stride, 0, 0, 0, 0};
    return scan(buf, start, end, ncol, &s, row0, row_limit, err_off, err_code);
}

/* A fio log (4-6 columns) into t, v (float64: the integers as logged), ddir (int8, 0-3), rows row0 ..
 * row_limit-1; agg (caller-initialised, 7 values) gets bs min, bs max, the column-5 max and the
 * count of each direction 0-3 of these rows. */
int64_t parse_fio_log(const uint8_t *buf, int64_t start, int64_t end, int64_t ncol, double *t,
                      double *v, int8_t *ddir, int64_t *agg, int64_t row0, int64_t row_limit,
                      int64_t *err_off, int64_t *err_code)
{
    sink_t s = {0, 0, t, v, ddir, agg};
    return scan(buf, start, end, ncol, &s, row0, row_limit, err_off, err_code);
}

/* rados bench table rows (Ceph's obj_bencher, every release): `sec  cur_ops  started  finished
 * avg_MB/s  cur_MB/s  last_lat(s)  avg_lat(s)`, 8 whitespace-separated values.  Row i is
 * buf[starts[i] : starts[i] + lens[i]) (line end and any timestamp prefix already cut off).  Values go
 * to the (8, ld) table out (row j at out + j * ld; ld >= n, so threads can fill slices of one table) in
 * canonical units, computed exactly as the Python reference
 * (radosbench._conv) does with one rounding: the token's digits as an integer S and its decimals F,
 * then counts S, bandwidths S * 2^20 / 10^F (B/s), latencies S * 10^(9-F) (ns).  bad[i] = 1 leaves the
 * row to the Python parser (which parses it exactly or names what is wrong): not 8 tokens (run-together
 * values), a character other than digits and one '.', '.' in a count, a token not ending in a digit,
 * more than 15 digits, more than 9 decimals in a latency; '-' alone is accepted as last_lat (NaN, before
 * the first completion).  Returns the number of bad rows. */
int64_t parse_rados_rows(const uint8_t *buf, const int64_t *starts, const int64_t *lens, int64_t n,
                         int64_t ld, double *out, uint8_t *bad)
{
    static const double p10[23] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                   1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int64_t nbad = 0;
    for (int64_t i = 0; i < n; i++) {
        const uint8_t *p = buf + starts[i], *e = p + lens[i];
        int k = 0, ok = 1;
        double v[8];
        while (ok) {
            while (p < e && (*p == ' ' || *p == '\t')) p++;
            if (p == e) break;
            if (k == 8) { ok = 0; break; }
            const uint8_t *t0 = p;
            int64_t s = 0;
            int digits = 0, dots = 0, frac = 0;
            while (p < e && *p != ' ' && *p != '\t') {
                uint8_t c = *p;
                if (c >= '0' && c <= '9') {
                    s = s * 10 + (c - '0');
                    digits++;
                    frac += dots;
                } else if (c == '.') {
                    dots++;
                } else if (c == '-' && k == 6 && p == t0 && (p + 1 == e || p[1] == ' ' || p[1] == '\t')) {
                    dots = -1;  /* '-' alone: NaN */
                } else {
                    ok = 0;
                    break;
                }
                p++;
            }
            if (!ok) break;
            if (dots == -1) {
                v[k++] = __builtin_nan("");
                continue;
            }
            if (digits == 0 || digits > 15 || dots > 1 || (dots && k < 4) || p[-1] == '.'
                || (k >= 6 && frac > 9)) { ok = 0; break; }
            double d = (double)s;
            if (k == 4 || k == 5) d = d * 1048576.0 / p10[frac];
            else if (k >= 6) d = d * p10[9 - frac];
            v[k++] = d;
        }
        if (ok && k == 8) {
            for (int j = 0; j < 8; j++) out[j * ld + i] = v[j];
            bad[i] = 0;
        } else {
            bad[i] = 1;
            nbad++;
        }
    }
    return nbad;
}
