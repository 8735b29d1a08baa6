/* The compiled core of share.pprof's decoder (loaded by scan.py with ctypes; no Python API).
 *
 * pps_scan walks a decompressed profile once, exactly as Go's decoder (google/pprof's
 * profile/proto.go) walks it, and either gives up or yields the flat columns decode.py's
 * Columns holds. It gives up (returns a non-zero reason) on anything where upb might read the
 * bytes otherwise than Go, or where Go would fail: a malformed or cut-off field, field number 0,
 * a known field with a wire type Go refuses, groups, a singular field given twice, a 10-byte
 * varint with bits past 64. Those files take the pure-Python path, which names the problem.
 * Unknown fields Go skips are skipped here too (and reported, so that upb's copy is dropped).
 *
 * Called twice: with outs NULL it only counts (so the caller can check its limits before any
 * allocation), then with outs pointing at arrays of exactly those sizes, which it fills.
 * It needs nothing but <stdint.h> and <stddef.h>: no allocation, no libc calls.
 *
 * At the end, in the same library (one compiler call on install), pps_first_frames: a loop of
 * share.analysis's that numpy could only do with a sort (scan.py's first_frames).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define PPS_VERSION 5

/* counts[] */
enum {
    C_SAMPLES, C_IDS, C_VALUES, C_LABELS, C_LABEL_KEYS, C_LOCATIONS, C_LINES, C_FUNCTIONS,
    C_MAPPINGS, C_STRINGS, C_UNKNOWN, C_COUNTS
};
/* outs[]: int64 or uint64 arrays, sized by counts */
enum {
    O_SAMPLE_IDS,      /* [samples] location ids per sample */
    O_SAMPLE_VALUES,   /* [samples] values per sample */
    O_LOCATION_IDS,    /* [ids] every Sample.location_id */
    O_VALUES,          /* [values] every Sample.value */
    O_LABEL_KEY,       /* [labels] each Label's key (0 when absent, as Go reads it) */
    O_LABEL_STR,       /* [labels] */
    O_LABEL_UNIT,      /* [labels] num_unit */
    O_LABEL_NUM,       /* [labels] num (as uint64) */
    O_LABEL_SAMPLE,    /* [labels] the sample (its index in the file) the label belongs to */
    O_LOC_ID,          /* [locations] Location.id */
    O_LINE_FUNCTION,   /* [lines] Line.function_id */
    O_FUNCTION_ID,     /* [functions] */
    O_FUNCTION_NAMES,  /* [3 * functions]: name, system_name, filename of each */
    O_MAPPING_ID,      /* [mappings] */
    O_MAPPING_NAMES,   /* [2 * mappings]: filename, build_id of each */
    O_LOC_MAPPING,     /* [locations] Location.mapping_id */
    O_LOC_ADDRESS,     /* [locations] */
    O_LOC_FOLDED,      /* [locations] is_folded */
    O_LOC_LINES,       /* [locations] how many lines it has */
    O_LINE_NO,         /* [lines] Line.line (as uint64) */
    O_FUNCTION_START,  /* [functions] start_line (as uint64) */
    O_OUTS
};

/* Why a file is left to the pure-Python path (reasons, for tests and debugging). */
enum { OK, MALFORMED, FIELD_ZERO, ODD_TAG, WIRE_TYPE, REPEATED_SINGULAR, LONG_VARINT };

typedef struct {
    int64_t n[C_COUNTS];
    void **out; /* NULL while counting */
} state;

typedef struct {
    const uint8_t *p, *end;
} cursor;

/* Go's decodeVarint, refusing what upb might read otherwise: >10 bytes, or bits past 64. */
static int long_varint(cursor *c, uint64_t *value) {
    uint64_t x = 0;
    for (int i = 0; i < 10; i++) {
        if (c->p >= c->end)
            return MALFORMED;
        uint8_t b = *c->p++;
        if (i == 9 && b > 1)
            return LONG_VARINT;
        x |= (uint64_t)(b & 0x7F) << (7 * i);
        if (b < 0x80) {
            *value = x;
            return OK;
        }
    }
    return MALFORMED;
}

static inline int varint(cursor *c, uint64_t *value) {
    if (c->p < c->end && *c->p < 0x80) { /* most are one byte */
        *value = *c->p++;
        return OK;
    }
    return long_varint(c, value);
}

typedef struct {
    uint32_t num;
    int wire;
    uint64_t value;           /* wire type 0 */
    const uint8_t *from, *to; /* wire type 2: the payload */
} field;

/* The next field; unknown fixed-width fields are read here too (and skipped by the caller). */
static int next(cursor *c, field *f) {
    const uint8_t *start = c->p;
    uint64_t tag;
    int rc = varint(c, &tag);
    if (rc)
        return rc;
    /* upb reads tags as 32 bits, Go as 64; and leave non-minimal tags to the exact decoder. */
    if (tag > 0xFFFFFFFFu || (c->p - start > 1 && c->p[-1] == 0))
        return ODD_TAG;
    f->num = (uint32_t)(tag >> 3);
    f->wire = (int)(tag & 7);
    if (f->num == 0)
        return FIELD_ZERO;
    switch (f->wire) {
    case 0:
        return varint(c, &f->value);
    case 1:
    case 5: {
        ptrdiff_t size = f->wire == 1 ? 8 : 4;
        if (c->end - c->p < size)
            return MALFORMED;
        c->p += size;
        return OK;
    }
    case 2: {
        uint64_t size;
        rc = varint(c, &size);
        if (rc)
            return rc;
        if (size > (uint64_t)(c->end - c->p))
            return MALFORMED;
        f->from = c->p;
        f->to = c->p + size;
        c->p = f->to;
        return OK;
    }
    default: /* groups (3, 4): Go refuses them even where it would skip the field; 6, 7 */
        return WIRE_TYPE;
    }
}


/* A field number this message does not have: Go skips it, upb keeps it among unknown fields. */
static int unknown(state *s) {
    s->n[C_UNKNOWN]++;
    return OK;
}

/* A singular varint field: the right wire type, and at most once (Go and upb would both keep
 * the last one, but the pure-Python path's columns hold every occurrence: it decides those). */
static int singular(const field *f, uint32_t *seen) {
    if (f->wire != 0)
        return WIRE_TYPE;
    uint32_t bit = 1u << f->num;
    if (*seen & bit)
        return REPEATED_SINGULAR;
    *seen |= bit;
    return OK;
}

/* A field upb knows but google/pprof does not (Line.column, Profile.doc_url): as a varint upb
 * reads it and Go skips it; otherwise it is unknown to both. */
static int extra(state *s, const field *f) {
    return f->wire == 0 ? OK : unknown(s);
}

/* Repeated varints, packed or not, into out[at...] (when out is not NULL); *count of them. */
static int varints(const field *f, uint64_t *out, int64_t at, int64_t *count) {
    if (f->wire == 0) {
        if (out)
            out[at] = f->value;
        *count = 1;
        return OK;
    }
    if (f->wire != 2)
        return WIRE_TYPE;
    const uint8_t *p = f->from, *end = f->to;
    if (p < end && end[-1] >= 0x80)
        return MALFORMED; /* the last varint runs past the packed run */
    int64_t n = 0;
    if (!out) {
        /* Counting: every byte below 0x80 ends a varint. Branch-free (the lengths vary too much
         * to predict); the longest run of continuation bytes is checked afterwards. */
        unsigned run = 0, longest = 0;
        for (const uint8_t *q = p; q < end; q++) {
            unsigned more = *q >> 7;
            n += more ^ 1;
            run = (run + 1) & (0u - more);
            longest = run > longest ? run : longest;
        }
        if (longest >= 9) { /* a 10-byte varint or longer: the exact check, byte by byte */
            cursor c = {p, end};
            uint64_t v;
            while (c.p < c.end) {
                int rc = long_varint(&c, &v);
                if (rc)
                    return rc;
            }
        }
    } else {
        /* Filling the same bytes, which counting found well-formed (and ending in a byte
         * below 0x80, so no varint reads past end). */
        while (p < end) {
            uint64_t x = *p++;
            if (x >= 0x80) {
                x &= 0x7F;
                int shift = 7;
                uint8_t b;
                do {
                    b = *p++;
                    x |= (uint64_t)(b & 0x7F) << shift;
                    shift += 7;
                } while (b >= 0x80);
            }
            out[at + n++] = x;
        }
    }
    *count = n;
    return OK;
}

#define OUT(s, k) ((uint64_t *)(s)->out[k])
#define BIT(n) (1u << (n))

static int value_type(state *s, cursor c) {
    uint32_t seen = 0;
    field f;
    while (c.p < c.end) {
        int rc = next(&c, &f);
        if (!rc)
            rc = f.num <= 2 ? singular(&f, &seen) : unknown(s);
        if (rc)
            return rc;
    }
    return OK;
}

static int label(state *s, cursor c) {
    uint32_t seen = 0;
    uint64_t v[5] = {0};
    field f;
    while (c.p < c.end) {
        int rc = next(&c, &f);
        if (!rc && f.num <= 4) {
            rc = singular(&f, &seen);
            v[f.num] = f.value;
        } else if (!rc) {
            rc = unknown(s);
        }
        if (rc)
            return rc;
    }
    int64_t i = s->n[C_LABELS]++;
    s->n[C_LABEL_KEYS] += (seen & BIT(1)) != 0;
    if (s->out) {
        OUT(s, O_LABEL_KEY)[i] = v[1];
        OUT(s, O_LABEL_STR)[i] = v[2];
        OUT(s, O_LABEL_UNIT)[i] = v[4];
        OUT(s, O_LABEL_NUM)[i] = v[3];
        OUT(s, O_LABEL_SAMPLE)[i] = (uint64_t)s->n[C_SAMPLES]; /* counted once it ends */
    }
    return OK;
}

static int sample(state *s, cursor c) {
    int64_t ids = 0, values = 0, n = 0;
    field f;
    while (c.p < c.end) {
        int rc = next(&c, &f);
        if (rc)
            return rc;
        switch (f.num) {
        case 1:
            rc = varints(&f, s->out ? OUT(s, O_LOCATION_IDS) : NULL, s->n[C_IDS], &n);
            s->n[C_IDS] += n;
            ids += n;
            break;
        case 2:
            rc = varints(&f, s->out ? OUT(s, O_VALUES) : NULL, s->n[C_VALUES], &n);
            s->n[C_VALUES] += n;
            values += n;
            break;
        case 3:
            rc = f.wire == 2 ? label(s, (cursor){f.from, f.to}) : WIRE_TYPE;
            break;
        default:
            rc = unknown(s);
        }
        if (rc)
            return rc;
        n = 0;
    }
    int64_t i = s->n[C_SAMPLES]++;
    if (s->out) {
        OUT(s, O_SAMPLE_IDS)[i] = (uint64_t)ids;
        OUT(s, O_SAMPLE_VALUES)[i] = (uint64_t)values;
    }
    return OK;
}

/* A message of singular scalar fields 1..max (Mapping, Function): their values into v[num]. */
static int singulars(state *s, cursor c, uint64_t *v, uint32_t max) {
    uint32_t seen = 0;
    field f;
    while (c.p < c.end) {
        int rc = next(&c, &f);
        if (!rc && f.num <= max) {
            rc = singular(&f, &seen);
            v[f.num] = f.value;
        } else if (!rc) {
            rc = unknown(s);
        }
        if (rc)
            return rc;
    }
    return OK;
}

static int mapping(state *s, cursor c) {
    uint64_t v[11] = {0};
    int rc = singulars(s, c, v, 10);
    if (rc)
        return rc;
    int64_t i = s->n[C_MAPPINGS]++;
    if (s->out) {
        OUT(s, O_MAPPING_ID)[i] = v[1];
        OUT(s, O_MAPPING_NAMES)[2 * i] = v[5];
        OUT(s, O_MAPPING_NAMES)[2 * i + 1] = v[6];
    }
    return OK;
}

static int line(state *s, cursor c) {
    uint32_t seen = 0;
    uint64_t v[3] = {0};
    field f;
    while (c.p < c.end) {
        int rc = next(&c, &f);
        if (!rc && f.num <= 2) {
            rc = singular(&f, &seen);
            v[f.num] = f.value;
        } else if (!rc) {
            rc = f.num == 3 ? extra(s, &f) : unknown(s);
        }
        if (rc)
            return rc;
    }
    int64_t i = s->n[C_LINES]++;
    if (s->out) {
        OUT(s, O_LINE_FUNCTION)[i] = v[1];
        OUT(s, O_LINE_NO)[i] = v[2];
    }
    return OK;
}

static int location(state *s, cursor c) {
    uint32_t seen = 0;
    uint64_t v[6] = {0};
    int64_t lines = s->n[C_LINES];
    field f;
    while (c.p < c.end) {
        int rc = next(&c, &f);
        if (rc)
            return rc;
        if (f.num == 4)
            rc = f.wire == 2 ? line(s, (cursor){f.from, f.to}) : WIRE_TYPE;
        else if (f.num <= 5)
            rc = singular(&f, &seen);
        else
            rc = unknown(s);
        if (rc)
            return rc;
        if (f.num <= 5 && f.num != 4)
            v[f.num] = f.value;
    }
    int64_t i = s->n[C_LOCATIONS]++;
    if (s->out) {
        OUT(s, O_LOC_ID)[i] = v[1];
        OUT(s, O_LOC_MAPPING)[i] = v[2];
        OUT(s, O_LOC_ADDRESS)[i] = v[3];
        OUT(s, O_LOC_FOLDED)[i] = v[5];
        OUT(s, O_LOC_LINES)[i] = (uint64_t)(s->n[C_LINES] - lines);
    }
    return OK;
}

static int function(state *s, cursor c) {
    uint64_t v[6] = {0};
    int rc = singulars(s, c, v, 5);
    if (rc)
        return rc;
    int64_t i = s->n[C_FUNCTIONS]++;
    if (s->out) {
        OUT(s, O_FUNCTION_ID)[i] = v[1];
        OUT(s, O_FUNCTION_START)[i] = v[5];
        for (int k = 0; k < 3; k++)
            OUT(s, O_FUNCTION_NAMES)[3 * i + k] = v[2 + k];
    }
    return OK;
}

static int profile(state *s, cursor c) {
    uint32_t seen = 0;
    field f;
    while (c.p < c.end) {
        int rc = next(&c, &f);
        if (rc)
            return rc;
        cursor inner = {f.from, f.to};
        int64_t n;
        switch (f.num) {
        case 1:
            rc = f.wire == 2 ? value_type(s, inner) : WIRE_TYPE;
            break;
        case 2:
            rc = f.wire == 2 ? sample(s, inner) : WIRE_TYPE;
            break;
        case 3:
            rc = f.wire == 2 ? mapping(s, inner) : WIRE_TYPE;
            break;
        case 4:
            rc = f.wire == 2 ? location(s, inner) : WIRE_TYPE;
            break;
        case 5:
            rc = f.wire == 2 ? function(s, inner) : WIRE_TYPE;
            break;
        case 6:
            rc = f.wire == 2 ? OK : WIRE_TYPE;
            s->n[C_STRINGS]++;
            break;
        case 11: /* period_type: Go replaces a second one, upb merges them */
            if (f.wire != 2)
                rc = WIRE_TYPE;
            else if (seen & BIT(11))
                rc = REPEATED_SINGULAR;
            else
                rc = value_type(s, inner);
            seen |= BIT(11);
            break;
        case 13: /* comment */
            rc = varints(&f, NULL, 0, &n);
            break;
        case 15:
            rc = extra(s, &f);
            break;
        case 7:
        case 8:
        case 9: /* time_nanos: a second one may be Go's "concatenated profiles" */
        case 10:
        case 12:
        case 14:
            rc = singular(&f, &seen);
            break;
        default:
            rc = unknown(s);
        }
        if (rc)
            return rc;
    }
    return OK;
}

int64_t pps_version(void) {
    return PPS_VERSION;
}

int64_t pps_counts(void) {
    return C_COUNTS;
}

int64_t pps_outs(void) {
    return O_OUTS;
}

/* 0 and the columns (counts[], and outs[] when not NULL), or why the file is left to Python. */
int pps_scan(const uint8_t *data, int64_t size, int64_t *counts, void **outs) {
    state s = {{0}, outs};
    int rc = profile(&s, (cursor){data, data + size});
    for (int k = 0; k < C_COUNTS; k++)
        counts[k] = s.n[k];
    return rc;
}

/* ---- Not decoding: the one analysis loop numpy has no linear-time form for ----
 *
 * pps_first_frames: each node's first frame in each stack (share/analysis/stacks.py's
 * first_frames, whose numpy form is a stable sort of every frame by node). Frames come stack
 * after stack (owner[i] is frame i's stack, equal for a stack's frames, never negative); a node
 * is first in its stack when the last stack seen[] saw it in is another one.
 *   first[i]    1 for the first frame of its node in its stack, else 0
 *   group[i]    that first frame's index (for every frame; group may be NULL)
 *   starts[]    [n_nodes + 1]: node k's first frames are owners[starts[k]:starts[k + 1]]
 *   owners[]    [n]: the stacks of the first frames, grouped by node, in frame order within
 * seen[] and at[] are scratch of n_nodes entries each; n must be below 2^31. Returns how many
 * frames are first (the used length of owners).
 */
int64_t pps_first_frames(const int32_t *node, const int32_t *owner, int64_t n, int64_t n_nodes,
                         int32_t *seen, int32_t *at, uint8_t *first, int32_t *group,
                         int64_t *starts, int32_t *owners) {
    for (int64_t k = 0; k < n_nodes; k++) {
        seen[k] = -1;
        starts[k] = 0;
    }
    for (int64_t i = 0; i < n; i++) {
        int32_t v = node[i];
        uint8_t is_first = seen[v] != owner[i];
        if (is_first) {
            seen[v] = owner[i];
            at[v] = (int32_t)i;
            starts[v]++;
        }
        first[i] = is_first;
        if (group)
            group[i] = at[v];
    }
    int64_t total = 0;
    for (int64_t k = 0; k < n_nodes; k++) {
        int64_t count = starts[k];
        starts[k] = total;
        total += count;
    }
    starts[n_nodes] = total;
    /* A counting sort, stable: starts[k] advances through node k's group, ending where the
     * next group starts; one shift then puts every start back. */
    for (int64_t i = 0; i < n; i++)
        if (first[i])
            owners[starts[node[i]]++] = owner[i];
    for (int64_t k = n_nodes; k > 0; k--)
        starts[k] = starts[k - 1];
    starts[0] = 0;
    return total;
}

/* pps_stack_hashes and pps_same_stacks: the two passes over every entry of unique_stacks
 * (share/analysis/stacks.py), without its temporaries the size of the entries. The hash of
 * stack i, bit for bit the numpy path's: the sum over its entries k of (loc + 1) * m^(k + 1),
 * xor its length * m2 (uint64, wrapping). pps_same_stacks: 1 when every stack i equals stack
 * rep[i] entry by entry, else 0. */
void pps_stack_hashes(const int64_t *loc, const int64_t *off, int64_t n, uint64_t m, uint64_t m2,
                      uint64_t *h) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t sum = 0, power = 1;
        for (int64_t e = off[i]; e < off[i + 1]; e++) {
            power *= m;
            sum += ((uint64_t)loc[e] + 1) * power;
        }
        h[i] = sum ^ ((uint64_t)(off[i + 1] - off[i]) * m2);
    }
}

int pps_same_stacks(const int64_t *loc, const int64_t *off, int64_t n, const int64_t *rep) {
    for (int64_t i = 0; i < n; i++) {
        int64_t a = off[rep[i]], b = off[i], length = off[i + 1] - b;
        if (off[rep[i] + 1] - a != length)
            return 0;
        for (int64_t k = 0; k < length; k++)
            if (loc[a + k] != loc[b + k])
                return 0;
    }
    return 1;
}

/* pps_group_sums: out[g] = the sum of values[owners[i]] for i in starts[g] .. starts[g + 1]
 * (the last group to n_owners; starts strictly increasing), wrapping as numpy's int64 sums:
 * np.add.reduceat(values[owners], starts) without the gathered copy (a node's cum over the
 * stacks of its first frames, share/analysis/graph.py's first_sums). */
void pps_group_sums(const int64_t *values, const int32_t *owners, const int64_t *starts,
                    int64_t n_groups, int64_t n_owners, int64_t *out) {
    for (int64_t g = 0; g < n_groups; g++) {
        int64_t end = g + 1 < n_groups ? starts[g + 1] : n_owners;
        uint64_t sum = 0;
        for (int64_t i = starts[g]; i < end; i++)
            sum += (uint64_t)values[owners[i]];
        out[g] = (int64_t)sum;
    }
}

/* pps_first_order: the distinct values of values[0..n) in order of first occurrence, into
 * out; returns how many, or -1 at a value outside [0, size) (the caller's other path then).
 * seen: size bytes, zeroed here. The locations, mappings and functions a merge meets in a
 * profile, in one pass, not a sort. */
int64_t pps_first_order(const int64_t *values, int64_t n, int64_t size, uint8_t *seen,
                        int64_t *out) {
    int64_t count = 0;
    for (int64_t k = 0; k < size; k++)
        seen[k] = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t v = values[i];
        if (v < 0 || v >= size)
            return -1;
        if (seen[v])
            continue;
        seen[v] = 1;
        out[count++] = v;
    }
    return count;
}

/* pps_varint_lengths: the length of each value's varint, 1 to 10 bytes, into lengths. */
void pps_varint_lengths(const uint64_t *v, int64_t n, int64_t *lengths) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = v[i];
        int64_t length = 1;
        while (x >= 0x80) {
            x >>= 7;
            length++;
        }
        lengths[i] = length;
    }
}

/* pps_put_varints: each v[i] written as a varint of exactly lengths[i] bytes at out[at[i]]
 * (pps_varint_lengths' lengths; never more, so the caller's bounds check holds): the packed
 * fields and scalars of a merge's encoding (share/analysis/combine/encode.py), a third of its
 * time in numpy. */
void pps_put_varints(const uint64_t *v, int64_t n, const int64_t *at, const int64_t *lengths,
                     uint8_t *out) {
    for (int64_t i = 0; i < n; i++) {
        uint64_t x = v[i];
        uint8_t *p = out + at[i];
        for (int64_t k = 1; k < lengths[i]; k++) {
            *p++ = (uint8_t)(x | 0x80);
            x >>= 7;
        }
        *p = (uint8_t)(x & 0x7F);
    }
}

/* pps_copy_ranges: out[dst[i] .. dst[i] + len[i]) = data[src[i] .. src[i] + len[i]) for each i:
 * the byte runs an encoding moves into place (fields into their messages), one memcpy each
 * rather than numpy's index per byte. */
void pps_copy_ranges(const uint8_t *data, const int64_t *src, const int64_t *dst,
                     const int64_t *len, int64_t n, uint8_t *out) {
    for (int64_t i = 0; i < n; i++)
        if (len[i] > 0)
            memcpy(out + dst[i], data + src[i], (size_t)len[i]);
}
