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
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { ERR_CHAR = 1, ERR_COLS = 2, ERR_LONG = 3, ERR_ROWS = 4, ERR_DDIR = 5 };

typedef struct {
    int64_t *table;                 /* parse_rows: column c of row r at table[c * stride + r] */
    int64_t stride;
    double *t, *v;                  /* parse_fio_log */
    int8_t *ddir;
    int64_t *agg;                   /* [bs_min, bs_max, col5_max, rows with ddir 0, 1, 2, 3, blank lines] */
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
            if (j + 1 < end && buf[j + 1] == '\n') { i = j + 2; if (s->agg) s->agg[7]++; continue; }
            i = j;
            FAIL(ERR_CHAR);
        }
        if (buf[j] == '\n') { i = j + 1; if (s->agg) s->agg[7]++; continue; }
        i = j;
        /* past the bound no row can be whole: parse it without storing, to find its real error */
        int dry = r >= row_limit;
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
            if (dry) {
                if (!s->table && c == 2 && (neg ? -v : v) != 0 && (neg || v > 3)) { i = d0; FAIL(ERR_DDIR); }
            } else if ((e = store(s, c, r, neg ? -v : v))) { i = d0; FAIL(e); }
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
        if (dry) FAIL(ERR_ROWS);
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
 * row_limit-1; agg (caller-initialised, 8 values) gets bs min, bs max, the column-5 max, the
 * count of each direction 0-3 of these rows and the count of blank lines skipped. */
int64_t parse_fio_log(const uint8_t *buf, int64_t start, int64_t end, int64_t ncol, double *t,
                      double *v, int8_t *ddir, int64_t *agg, int64_t row0, int64_t row_limit,
                      int64_t *err_off, int64_t *err_code)
{
    sink_t s = {0, 0, t, v, ddir, agg};
    return scan(buf, start, end, ncol, &s, row0, row_limit, err_off, err_code);
}

/* ---- cephqos-pg-timeline PG rows (analysis/ingest/ceph_timeline.py) --------------------------------
 *
 * buf holds the row bytes of every sample line, one line per sample: what lies between "pgs":[[ and ]]
 * of {"t": ..., "pgs": [[...], [...]]}, i.e. rows `v, v, ...` separated by `],[` (whitespace [ \t\r]
 * allowed around values, commas and brackets).  ftype[f] says what field f of a row may hold:
 *   >= 0  a JSON number (stored as a double into num[ftype[f] * maxrows + row]) or null (NaN);
 *   -1/-2 pgid/state: a JSON string without escapes, control characters or bytes >= 0x80, interned:
 *         codes[slot * maxrows + row] = its index among the slot's distinct strings (first appearance);
 *   -3    any JSON scalar without escapes (string, number, true, false, null), not stored.
 * Anything else (nested values, escapes, a row of another length, a bad number) makes the function
 * decline: it returns -1 - (byte offset) and the caller reads the file with json instead, which gives
 * the exact error.  Otherwise it returns the number of rows and fills n_per[line] (rows per line).
 * The distinct strings of slot s are (uoff[s * cap + k], ulen[s * cap + k]) for k < nuniq[s]; table
 * is 2 * cap int32 of hash slots (cap a power of two); more than cap / 2 distinct strings in a slot
 * returns INT64_MIN (the caller retries with a larger cap). */
static inline const uint8_t *ws(const uint8_t *p, const uint8_t *e)
{
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) p++;
    return p;
}

/* JSON number grammar -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?; returns its end or NULL. */
static const uint8_t *json_number(const uint8_t *p, const uint8_t *e)
{
    if (p < e && *p == '-') p++;
    if (p >= e) return NULL;
    if (*p == '0') p++;
    else if (*p >= '1' && *p <= '9') { while (p < e && *p >= '0' && *p <= '9') p++; }
    else return NULL;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || *p < '0' || *p > '9') return NULL;
        while (p < e && *p >= '0' && *p <= '9') p++;
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        p++;
        if (p < e && (*p == '+' || *p == '-')) p++;
        if (p >= e || *p < '0' || *p > '9') return NULL;
        while (p < e && *p >= '0' && *p <= '9') p++;
    }
    return p;
}

/* A string's end (after the closing quote) or NULL: no escapes, control characters, bytes >= 0x80. */
static const uint8_t *json_plain_string(const uint8_t *p, const uint8_t *e)
{
    if (p >= e || *p != '"') return NULL;
    for (p++; p < e; p++) {
        if (*p == '"') return p + 1;
        if (*p == '\\' || *p < 0x20 || *p >= 0x80) return NULL;
    }
    return NULL;
}

/* A JSON number at p (the grammar of json_number), read in the same pass: its end (NULL: not a JSON
 * number) and in *x its value when Clinger's fast path makes it exact — at most 19 digits whose value is
 * below 2^53, scaled by 10^e with |e| <= 22 (both factors exact, one correctly rounded IEEE operation:
 * what strtod returns) — else NaN, for the caller's strtod.  *is_int: no '.' and no exponent. */
static inline const uint8_t *json_number_value(const uint8_t *p, const uint8_t *e, double *x, int *is_int)
{
    static const double p10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int neg = 0, digits = 0, ok = 1;
    int64_t frac = 0, ex = 0;
    uint64_t m = 0;
    *is_int = 1;
    if (p < e && *p == '-') { neg = 1; p++; }
    if (p >= e) return NULL;
    if (*p == '0') { digits = 1; p++; }
    else if (*p >= '1' && *p <= '9') {
        for (; p < e && *p >= '0' && *p <= '9'; p++) {
            if (++digits > 19) ok = 0;
            else m = m * 10 + (uint64_t)(*p - '0');
        }
    } else return NULL;
    if (p < e && *p == '.') {
        p++;
        if (p >= e || *p < '0' || *p > '9') return NULL;
        *is_int = 0;
        for (; p < e && *p >= '0' && *p <= '9'; p++, frac++) {
            if (++digits > 19) ok = 0;
            else m = m * 10 + (uint64_t)(*p - '0');
        }
    }
    if (p < e && (*p == 'e' || *p == 'E')) {
        int eneg = 0;
        *is_int = 0;
        p++;
        if (p < e && (*p == '+' || *p == '-')) eneg = *p++ == '-';
        if (p >= e || *p < '0' || *p > '9') return NULL;
        for (; p < e && *p >= '0' && *p <= '9'; p++) {
            if (ex <= 10000) ex = ex * 10 + (*p - '0');
            if (ex > 10000) ok = 0;
        }
        if (eneg) ex = -ex;
    }
    ex -= frac;
    if (!ok || m > ((uint64_t)1 << 53) || ex < -22 || ex > 22) { *x = NAN; return p; }
    double v = (double)m;
    v = ex < 0 ? v / p10[-ex] : v * p10[ex];
    *x = neg ? -v : v;
    return p;
}

static inline int lit(const uint8_t *p, const uint8_t *e, const char *w, int64_t n)
{
    return e - p >= n && memcmp(p, w, (size_t)n) == 0;
}

int64_t pg_rows(const uint8_t *buf, int64_t n, int64_t nf, const int64_t *ftype, int64_t nlines,
                int64_t maxrows, int64_t *n_per, double *num, int32_t *codes, int64_t cap, int32_t *table,
                int64_t *uoff, int64_t *ulen, int64_t *nuniq)
{
    const uint8_t *p = buf, *e = buf + n;
    int64_t row = 0;
    char tmp[64];
    for (int64_t s = 0; s < 2 * cap; s++) table[s] = -1;
    nuniq[0] = nuniq[1] = 0;
    for (int64_t line = 0; line < nlines; line++) {
        const uint8_t *le = memchr(p, '\n', (size_t)(e - p));
        if (!le) le = e;
        int64_t first = row;
        for (;;) {  /* one row */
            if (row >= maxrows) return -1 - (p - buf);
            for (int64_t f = 0; f < nf; f++) {
                p = ws(p, le);
                if (p >= le) return -1 - (p - buf);
                int64_t t = ftype[f];
                const uint8_t *q;
                if (t >= 0) {
                    if (lit(p, le, "null", 4)) { num[t * maxrows + row] = NAN; q = p + 4; }
                    else {
                        int is_int = 1;
                        double x;
                        q = json_number_value(p, le, &x, &is_int);
                        if (!q || q - p >= (int64_t)sizeof tmp) return -1 - (p - buf);
                        if (x != x) {  /* outside the exact fast path: the C library's correctly rounded strtod */
                            memcpy(tmp, p, (size_t)(q - p));
                            tmp[q - p] = 0;
                            x = strtod(tmp, NULL);
                        }
                        /* "-0" is an integer (Python's json: int 0 -> 0.0); "-0.0" stays -0.0 */
                        if (x == 0 && is_int) x = 0.0;
                        num[t * maxrows + row] = x;
                    }
                } else if (t == -1 || t == -2) {
                    q = json_plain_string(p, le);
                    if (!q) return -1 - (p - buf);
                    int64_t slot = -1 - t, off = p + 1 - buf, len = q - p - 2;
                    uint64_t h = 1469598103934665603ULL;
                    for (const uint8_t *c = p + 1; c < q - 1; c++) h = (h ^ *c) * 1099511628211ULL;
                    int32_t *tab = table + slot * cap;
                    int64_t k = (int64_t)(h & (uint64_t)(cap - 1)), code = -1;
                    while (tab[k] >= 0) {
                        int64_t u = slot * cap + tab[k];
                        if (ulen[u] == len && memcmp(buf + uoff[u], buf + off, (size_t)len) == 0) { code = tab[k]; break; }
                        k = (k + 1) & (cap - 1);
                    }
                    if (code < 0) {
                        if (2 * (nuniq[slot] + 1) > cap) return INT64_MIN;  /* caller retries, larger */
                        code = nuniq[slot]++;
                        tab[k] = (int32_t)code;
                        uoff[slot * cap + code] = off;
                        ulen[slot * cap + code] = len;
                    }
                    codes[slot * maxrows + row] = (int32_t)code;
                } else {
                    if (*p == '"') q = json_plain_string(p, le);
                    else if (lit(p, le, "null", 4)) q = p + 4;
                    else if (lit(p, le, "true", 4)) q = p + 4;
                    else if (lit(p, le, "false", 5)) q = p + 5;
                    else q = json_number(p, le);
                    if (!q) return -1 - (p - buf);
                }
                p = ws(q, le);
                if (f < nf - 1) {
                    if (p >= le || *p != ',') return -1 - (p - buf);
                    p++;
                }
            }
            row++;
            if (p == le) break;                                  /* the line's last row */
            if (*p != ']') return -1 - (p - buf);
            p = ws(p + 1, le);
            if (p >= le || *p != ',') return -1 - (p - buf);
            p = ws(p + 1, le);
            if (p >= le || *p != '[') return -1 - (p - buf);
            p++;
        }
        n_per[line] = row - first;
        p = le + 1;
    }
    return row;
}


/* The lines of a cephqos-pg-timeline (ceph_timeline._load), split at '\n' as bytes.split does:
 * start[i] = first byte of line i, start[nlines] = n + 1 (line i ends at start[i + 1] - 1);
 * kind[i] = 0 blank (only ' ' \t \n \r \v \f, as bytes.strip), 1 the poller's sample shape
 * (ceph_timeline._FAST_SAMPLE, whole line) with no ':' in its rows, 2 anything else;
 * pos[4i..4i+3] (kind 1): the time number's start and end, the rows' start and end (between "[[" and the
 * last "]]").  Returns the number of lines (at most maxlines = count of '\n' + 1). */
static inline int ws_tab(uint8_t c) { return c == ' ' || c == '\t'; }

static int pg_sample_shape(const uint8_t *p, const uint8_t *e, int64_t *pos, const uint8_t *base)
{
    while (p < e && ws_tab(*p)) p++;
    if (p >= e || *p++ != '{') return 0;
    while (p < e && ws_tab(*p)) p++;
    if (!lit(p, e, "\"t\"", 3)) return 0;
    p += 3;
    while (p < e && ws_tab(*p)) p++;
    if (p >= e || *p++ != ':') return 0;
    while (p < e && ws_tab(*p)) p++;
    const uint8_t *ns = p;  /* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? */
    if (p < e && *p == '-') p++;
    if (p < e && *p == '0') p++;
    else if (p < e && *p >= '1' && *p <= '9') { while (p < e && *p >= '0' && *p <= '9') p++; }
    else return 0;
    if (p + 1 < e && *p == '.' && p[1] >= '0' && p[1] <= '9') { p++; while (p < e && *p >= '0' && *p <= '9') p++; }
    if (p < e && (*p == 'e' || *p == 'E')) {
        const uint8_t *q = p + 1;
        if (q < e && (*q == '+' || *q == '-')) q++;
        if (q < e && *q >= '0' && *q <= '9') { while (q < e && *q >= '0' && *q <= '9') q++; p = q; }
    }
    const uint8_t *ne = p;
    while (p < e && ws_tab(*p)) p++;
    if (p >= e || *p++ != ',') return 0;
    while (p < e && ws_tab(*p)) p++;
    if (!lit(p, e, "\"pgs\"", 5)) return 0;
    p += 5;
    while (p < e && ws_tab(*p)) p++;
    if (p >= e || *p++ != ':') return 0;
    while (p < e && ws_tab(*p)) p++;
    if (!lit(p, e, "[[", 2)) return 0;
    const uint8_t *rs = p + 2, *q = e;
    while (q > rs && (ws_tab(q[-1]) || q[-1] == '\r')) q--;
    if (q <= rs || q[-1] != '}') return 0;
    q--;
    while (q > rs && ws_tab(q[-1])) q--;
    if (q - rs < 2 || q[-1] != ']' || q[-2] != ']') return 0;
    const uint8_t *re = q - 2;
    if (memchr(rs, ':', (size_t)(re - rs))) return 0;
    pos[0] = ns - base; pos[1] = ne - base; pos[2] = rs - base; pos[3] = re - base;
    return 1;
}

int64_t pg_lines(const uint8_t *buf, int64_t n, int64_t maxlines, int64_t *start, int8_t *kind, int64_t *pos)
{
    const uint8_t *p = buf, *e = buf + n;
    int64_t i = 0;
    for (;;) {
        if (i >= maxlines) return -1;
        const uint8_t *le = memchr(p, '\n', (size_t)(e - p));
        if (!le) le = e;
        start[i] = p - buf;
        const uint8_t *q = p;
        while (q < le && (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\v' || *q == '\f')) q++;
        kind[i] = q == le ? 0 : pg_sample_shape(p, le, pos + 4 * i, buf) ? 1 : 2;
        i++;
        if (le == e) break;
        p = le + 1;
    }
    start[i] = n + 1;
    return i;
}
