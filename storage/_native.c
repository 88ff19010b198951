/* storage._native: the listpack loops that cost the most in Python, in C.
 *
 * How it works. Two loops run once per stream entry on the bulk paths: turning a node's
 * entries into RESP on their first read (stream_resp.encode_node), and encoding an XADD's
 * entry as listpack elements into the tail node (Stream.append). Both are written in Python
 * beside their callers and give the same bytes; this module is an optional build of them.
 * storage/native.py imports it when it was built and XSTREAMD_PURE_PYTHON is unset, and
 * the tests run both and compare their output.
 *
 * id_keys turns XACK's IDs into the 16-byte keys the PEL is looked up by, for the plain
 * "ms-seq" form; anything else is left to the Python parser (and its errors).
 *
 * Nothing here trusts the node's bytes: every read is checked against the buffer's end,
 * and a node that does not parse makes encode_node return None, so the caller takes the
 * Python path (and its errors). The format is Redis's listpack (listpack.md) and its
 * stream node layout (t_stream.c's comments); no code is taken from either.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#define FLAG_DELETED 1
#define FLAG_SAMEFIELDS 2

/* -- a growable byte buffer ---------------------------------------------------------------- */

typedef struct {
    char *data;
    size_t len;
    size_t cap;
} Buf;

static int buf_reserve(Buf *b, size_t more) {
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    char *data = PyMem_Realloc(b->data, cap);
    if (data == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = data;
    b->cap = cap;
    return 0;
}

static inline int buf_put(Buf *b, const void *src, size_t n) {
    if (buf_reserve(b, n) < 0)
        return -1;
    memcpy(b->data + b->len, src, n);
    b->len += n;
    return 0;
}

/* Decimal text of v into out (at least 20 bytes); returns its length. */
static size_t u64_text(uint64_t v, char *out) {
    char tmp[20];
    size_t n = 0;
    do {
        tmp[n++] = (char)('0' + v % 10);
        v /= 10;
    } while (v);
    for (size_t i = 0; i < n; i++)
        out[i] = tmp[n - 1 - i];
    return n;
}

static size_t i64_text(int64_t v, char *out) {
    if (v < 0) {
        out[0] = '-';
        return 1 + u64_text((uint64_t)0 - (uint64_t)v, out + 1);
    }
    return u64_text((uint64_t)v, out);
}

/* "<c><n>\r\n": a RESP header (c is '$' or '*'). */
static inline int put_header(Buf *b, char c, size_t n) {
    char line[24];
    line[0] = c;
    size_t k = 1 + u64_text(n, line + 1);
    line[k++] = '\r';
    line[k++] = '\n';
    return buf_put(b, line, k);
}

/* -- reading listpack elements -------------------------------------------------------------- */

typedef struct {
    int is_int;
    int64_t v;
    const uint8_t *s;
    size_t slen;
} Elem;

static size_t backlen_size(size_t l) {
    if (l <= 127)
        return 1;
    if (l < 16383)
        return 2;
    if (l < 2097151)
        return 3;
    if (l < 268435455)
        return 4;
    return 5;
}

/* The element at off (end: the offset of the listpack's last byte, its 0xFF, which no
 * element may reach); returns the offset after its backlen, or 0 if it does not parse. */
static size_t read_elem(const uint8_t *p, size_t end, size_t off, Elem *e) {
    if (off >= end)
        return 0;
    uint8_t b = p[off];
    size_t next;
    if (b < 0x80) {
        e->is_int = 1;
        e->v = b;
        next = off + 2;
    } else if (b < 0xC0) {
        size_t n = b & 0x3F;
        e->is_int = 0;
        e->s = p + off + 1;
        e->slen = n;
        next = off + 2 + n;
    } else if (b < 0xE0) {
        if (off + 1 >= end)
            return 0;
        int v = ((b & 0x1F) << 8) | p[off + 1];
        e->is_int = 1;
        e->v = v >= 4096 ? v - 8192 : v;
        next = off + 3;
    } else if (b < 0xF0) {
        if (off + 1 >= end)
            return 0;
        size_t n = ((size_t)(b & 0x0F) << 8) | p[off + 1];
        e->is_int = 0;
        e->s = p + off + 2;
        e->slen = n;
        next = off + 2 + n + (n < 126 ? 1 : 2);
    } else if (b == 0xF0) {
        if (off + 5 > end)
            return 0;
        size_t n = (size_t)p[off + 1] | ((size_t)p[off + 2] << 8) | ((size_t)p[off + 3] << 16) |
                   ((size_t)p[off + 4] << 24);
        e->is_int = 0;
        e->s = p + off + 5;
        e->slen = n;
        next = off + 5 + n + backlen_size(n + 5);
    } else if (b >= 0xF1 && b <= 0xF4) {
        static const size_t widths[] = {2, 3, 4, 8};
        size_t w = widths[b - 0xF1];
        if (off + 1 + w > end)
            return 0;
        uint64_t u = 0;
        for (size_t i = 0; i < w; i++)
            u |= (uint64_t)p[off + 1 + i] << (8 * i);
        if (w < 8 && (u >> (8 * w - 1)) & 1)
            u |= ~(uint64_t)0 << (8 * w); /* sign-extend */
        e->is_int = 1;
        e->v = (int64_t)u;
        next = off + 1 + w + 1;
    } else {
        return 0; /* 0xF5..0xFE are not encodings, and 0xFF ends the listpack */
    }
    return next <= end ? next : 0;
}

static inline size_t read_int(const uint8_t *p, size_t end, size_t off, int64_t *v) {
    Elem e;
    size_t next = read_elem(p, end, off, &e);
    if (!next || !e.is_int)
        return 0;
    *v = e.v;
    return next;
}

/* An element as a RESP bulk string: integers in decimal. */
static int put_bulk(Buf *b, const Elem *e) {
    if (e->is_int) {
        char text[24];
        size_t n = i64_text(e->v, text);
        if (put_header(b, '$', n) < 0 || buf_put(b, text, n) < 0)
            return -1;
    } else if (put_header(b, '$', e->slen) < 0 || buf_put(b, e->s, e->slen) < 0) {
        return -1;
    }
    return buf_put(b, "\r\n", 2);
}

/* -- encode_node ----------------------------------------------------------------------------- */

PyDoc_STRVAR(encode_node_doc,
"encode_node(buf, off, master_ms, master_seq, names) -> (blob, starts, keys) | None\n\n"
"stream_resp.encode_node's loop: the RESP of the live entries of the stream node in buf,\n"
"whose first entry's flags are at off; starts as native uint32s (array('I')'s bytes);\n"
"None when the bytes do not parse.");

static PyObject *encode_node(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t off_arg;
    unsigned long long mms, mseq;
    PyObject *names;
    if (!PyArg_ParseTuple(args, "y*nKKO", &view, &off_arg, &mms, &mseq, &names))
        return NULL;
    PyObject *result = NULL;
    Buf out = {0}, starts = {0}, keys = {0}, heads = {0};
    size_t *head_at = NULL;
    PyObject *seq = PySequence_Fast(names, "names must be a sequence");
    if (seq == NULL)
        goto done;
    Py_ssize_t nmaster = PySequence_Fast_GET_SIZE(seq);
    /* Per master field, the lines before its value: "$<len>\r\n<name>\r\n" (the first
     * opening with the fields' array header), laid end to end in heads. */
    head_at = PyMem_Malloc(sizeof(size_t) * (nmaster + 1));
    if (head_at == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < nmaster; i++) {
        PyObject *name = PySequence_Fast_GET_ITEM(seq, i);
        char *s;
        Py_ssize_t n;
        if (PyBytes_AsStringAndSize(name, &s, &n) < 0)
            goto done;
        head_at[i] = heads.len;
        if ((i == 0 && put_header(&heads, '*', 2 * (size_t)nmaster) < 0) ||
            put_header(&heads, '$', (size_t)n) < 0 || buf_put(&heads, s, (size_t)n) < 0 ||
            buf_put(&heads, "\r\n", 2) < 0)
            goto done;
    }
    head_at[nmaster] = heads.len;

    const uint8_t *p = view.buf;
    size_t len = (size_t)view.len;
    if (len < 7 || off_arg < 0 || p[len - 1] != 0xFF)
        goto unparsed;
    size_t end = len - 1, off = (size_t)off_arg;
    while (off < end) {
        int64_t flags, msd, seqd;
        if (!(off = read_int(p, end, off, &flags)) || !(off = read_int(p, end, off, &msd)) ||
            !(off = read_int(p, end, off, &seqd)))
            goto unparsed;
        uint64_t ms = (uint64_t)mms + (uint64_t)msd, sq = (uint64_t)mseq + (uint64_t)seqd;
        int same = (flags & FLAG_SAMEFIELDS) != 0;
        int64_t nf = nmaster;
        if (!same && !(off = read_int(p, end, off, &nf)))
            goto unparsed;
        if (nf < 0 || (uint64_t)nf > end)
            goto unparsed;
        size_t nvalues = same ? (size_t)nf : 2 * (size_t)nf;
        Elem e;
        if (flags & FLAG_DELETED) {
            for (size_t i = 0; i <= nvalues; i++) /* the values (and fields), the lp-count */
                if (!(off = read_elem(p, end, off, &e)))
                    goto unparsed;
            continue;
        }
        uint32_t start = (uint32_t)out.len;
        if (out.len > UINT32_MAX || buf_put(&starts, &start, sizeof start) < 0)
            goto unparsed;
        uint8_t key[16];
        for (int i = 0; i < 8; i++) {
            key[i] = (uint8_t)(ms >> (56 - 8 * i));
            key[8 + i] = (uint8_t)(sq >> (56 - 8 * i));
        }
        if (buf_put(&keys, key, 16) < 0)
            goto done;
        char id[48];
        size_t idlen = u64_text(ms, id);
        id[idlen++] = '-';
        idlen += u64_text(sq, id + idlen);
        if (buf_put(&out, "*2\r\n", 4) < 0 || put_header(&out, '$', idlen) < 0 ||
            buf_put(&out, id, idlen) < 0 || buf_put(&out, "\r\n", 2) < 0)
            goto done;
        if (!same && put_header(&out, '*', nvalues) < 0)
            goto done;
        for (size_t i = 0; i < nvalues; i++) {
            if (!(off = read_elem(p, end, off, &e)))
                goto unparsed;
            if (same && buf_put(&out, heads.data + head_at[i], head_at[i + 1] - head_at[i]) < 0)
                goto done;
            if (put_bulk(&out, &e) < 0)
                goto done;
        }
        if (!(off = read_elem(p, end, off, &e))) /* lp-count */
            goto unparsed;
    }
    if (off != end)
        goto unparsed;
    uint32_t total = (uint32_t)out.len;
    if (out.len > UINT32_MAX || buf_put(&starts, &total, sizeof total) < 0)
        goto unparsed;
    result = Py_BuildValue("(y#y#y#)", out.data ? out.data : "", (Py_ssize_t)out.len,
                           starts.data, (Py_ssize_t)starts.len,
                           keys.data ? keys.data : "", (Py_ssize_t)keys.len);
    goto done;
unparsed:
    if (!PyErr_Occurred()) {
        Py_INCREF(Py_None);
        result = Py_None;
    }
done:
    Py_XDECREF(seq);
    PyMem_Free(head_at);
    PyMem_Free(out.data);
    PyMem_Free(starts.data);
    PyMem_Free(keys.data);
    PyMem_Free(heads.data);
    PyBuffer_Release(&view);
    return result;
}

/* -- encoding elements ----------------------------------------------------------------------- */

/* lpStringToInt64's rules: the canonical decimal form of an int64 (no '+', no leading
 * zeros, no "-0", at most 20 bytes). */
static int canonical_int(const char *s, size_t n, int64_t *out) {
    if (n == 0 || n > 20)
        return 0;
    size_t i = 0;
    int neg = 0;
    if (s[0] == '-') {
        if (n == 1)
            return 0;
        neg = 1;
        i = 1;
    }
    if (s[i] == '0')
        return n == 1 ? (*out = 0, 1) : 0;
    uint64_t v = 0;
    for (; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return 0;
        uint64_t d = (uint64_t)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return 0;
        *out = (int64_t)((uint64_t)0 - v);
    } else {
        if (v > (uint64_t)INT64_MAX)
            return 0;
        *out = (int64_t)v;
    }
    return 1;
}

static void put_backlen(uint8_t *dst, size_t *k, size_t l) {
    /* Read right to left: the last byte holds the lowest 7 bits; every byte but the
     * first has bit 128 set. */
    size_t n = backlen_size(l);
    for (size_t i = 0; i < n; i++) {
        uint8_t part = (uint8_t)((l >> (7 * (n - 1 - i))) & 127);
        dst[*k + i] = i ? (part | 128) : part;
    }
    *k += n;
}

static int put_int_elem(Buf *b, int64_t v) {
    uint8_t e[12];
    size_t k;
    if (v >= 0 && v <= 127) {
        e[0] = (uint8_t)v;
        e[1] = 1;
        k = 2;
    } else if (v >= -4096 && v <= 4095) {
        uint16_t u = (uint16_t)(v < 0 ? v + 8192 : v);
        e[0] = (uint8_t)((u >> 8) | 0xC0);
        e[1] = (uint8_t)(u & 0xFF);
        e[2] = 2;
        k = 3;
    } else {
        size_t w;
        uint8_t tag;
        if (v >= -32768 && v <= 32767)
            w = 2, tag = 0xF1;
        else if (v >= -8388608 && v <= 8388607)
            w = 3, tag = 0xF2;
        else if (v >= INT32_MIN && v <= INT32_MAX)
            w = 4, tag = 0xF3;
        else
            w = 8, tag = 0xF4;
        e[0] = tag;
        uint64_t u = (uint64_t)v;
        for (size_t i = 0; i < w; i++)
            e[1 + i] = (uint8_t)(u >> (8 * i));
        e[1 + w] = (uint8_t)(1 + w);
        k = 2 + w;
    }
    return buf_put(b, e, k);
}

static int put_value_elem(Buf *b, const char *s, size_t n) {
    int64_t v;
    if (n && ((s[0] >= '0' && s[0] <= '9') || s[0] == '-') && canonical_int(s, n, &v))
        return put_int_elem(b, v);
    uint8_t head[8];
    size_t k = 0;
    if (n < 64) {
        head[k++] = (uint8_t)(0x80 | n);
    } else if (n < 4096) {
        head[k++] = (uint8_t)(0xE0 | (n >> 8));
        head[k++] = (uint8_t)(n & 0xFF);
    } else if (n <= UINT32_MAX) {
        head[k++] = 0xF0;
        for (int i = 0; i < 4; i++)
            head[k++] = (uint8_t)(n >> (8 * i));
    } else {
        PyErr_SetString(PyExc_ValueError, "string too long for a listpack");
        return -1;
    }
    size_t hl = k;
    uint8_t tail[8];
    size_t t = 0;
    put_backlen(tail, &t, hl + n);
    if (buf_reserve(b, hl + n + t) < 0)
        return -1;
    buf_put(b, head, hl);
    buf_put(b, s, n);
    buf_put(b, tail, t);
    return 0;
}

/* The ID's two differences from the master entry's, taken modulo 2**64 (the int64s Redis
 * stores), and the fields as a fast sequence of at least one pair (a new reference). */
static PyObject *entry_args(PyObject *ms_obj, PyObject *seq_obj, PyObject *fields_arg,
                            uint64_t *msd, uint64_t *seqd) {
    *msd = PyLong_AsUnsignedLongLongMask(ms_obj);
    if (*msd == (uint64_t)-1 && PyErr_Occurred())
        return NULL;
    *seqd = PyLong_AsUnsignedLongLongMask(seq_obj);
    if (*seqd == (uint64_t)-1 && PyErr_Occurred())
        return NULL;
    PyObject *fields = PySequence_Fast(fields_arg, "fields must be a sequence");
    if (fields == NULL)
        return NULL;
    Py_ssize_t nitems = PySequence_Fast_GET_SIZE(fields);
    if (nitems < 2 || nitems & 1) {
        PyErr_SetString(PyExc_ValueError,
                        "fields must be a non-empty flat list of field/value pairs");
        Py_DECREF(fields);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < nitems; i++)
        if (!PyBytes_Check(PySequence_Fast_GET_ITEM(fields, i))) {
            PyErr_SetString(PyExc_TypeError, "fields must be bytes");
            Py_DECREF(fields);
            return NULL;
        }
    return fields;
}

/* An entry's elements (stream_node.encode_entry's) into b: its flags, its ID's differences
 * from the master entry, then with same (the fields are the master entry's) the values,
 * else their count and every field and value, then lp-count. items: nitems bytes. */
static int put_entry(Buf *b, uint64_t msd, uint64_t seqd, PyObject *const *items,
                     Py_ssize_t nitems, int same) {
    Py_ssize_t npairs = nitems / 2;
    if (put_int_elem(b, same ? FLAG_SAMEFIELDS : 0) < 0 || put_int_elem(b, (int64_t)msd) < 0 ||
        put_int_elem(b, (int64_t)seqd) < 0 || (!same && put_int_elem(b, npairs) < 0))
        return -1;
    for (Py_ssize_t i = same ? 1 : 0; i < nitems; i += same ? 2 : 1) {
        PyObject *item = items[i];
        if (put_value_elem(b, PyBytes_AS_STRING(item), (size_t)PyBytes_GET_SIZE(item)) < 0)
            return -1;
    }
    return put_int_elem(b, same ? npairs + 3 : 2 * npairs + 4);
}

/* Whether the field names of items (nitems bytes: field, value, ...) are names, in order
 * (a SAMEFIELDS entry). */
static int same_fields(PyObject *const *items, Py_ssize_t nitems, PyObject *names) {
    if (PySequence_Fast_GET_SIZE(names) != nitems / 2)
        return 0;
    for (Py_ssize_t i = 0; i < nitems / 2; i++) {
        PyObject *field = items[2 * i];
        PyObject *name = PySequence_Fast_GET_ITEM(names, i);
        if (!PyBytes_Check(name) || PyBytes_GET_SIZE(name) != PyBytes_GET_SIZE(field) ||
            memcmp(PyBytes_AS_STRING(name), PyBytes_AS_STRING(field),
                   (size_t)PyBytes_GET_SIZE(field)) != 0)
            return 0;
    }
    return 1;
}

PyDoc_STRVAR(append_entry_doc,
"append_entry(buf, ms_diff, seq_diff, fields, names, limit) -> int\n\n"
"Stream.append's step for an entry that goes into the tail node buf (a bytearray ending\n"
"with the listpack's end byte): -1, with buf unchanged, when len(buf) plus the fields'\n"
"bytes reaches limit (the node is full); else the entry's elements (encode_entry's, with\n"
"SAMEFIELDS when the fields' names are names) replace the end byte, which follows them,\n"
"and the count of elements added is returned. The header is left to the caller.");

/* (METH_FASTCALL: a pipelined XADD calls this once per entry, and PyArg_ParseTuple's
 * format parsing cost about as much as the entry's encoding.) */
static PyObject *append_entry(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 6) {
        PyErr_SetString(PyExc_TypeError, "append_entry takes 6 arguments");
        return NULL;
    }
    PyObject *buf = args[0], *ms_obj = args[1], *seq_obj = args[2], *fields_arg = args[3],
             *names_arg = args[4];
    if (!PyByteArray_Check(buf)) {
        PyErr_SetString(PyExc_TypeError, "append_entry needs a bytearray");
        return NULL;
    }
    Py_ssize_t limit = PyLong_AsSsize_t(args[5]);
    if (limit == -1 && PyErr_Occurred())
        return NULL;
    uint64_t msd, seqd;
    PyObject *fields = entry_args(ms_obj, seq_obj, fields_arg, &msd, &seqd);
    if (fields == NULL)
        return NULL;
    PyObject *names = PySequence_Fast(names_arg, "names must be a sequence");
    if (names == NULL) {
        Py_DECREF(fields);
        return NULL;
    }
    PyObject *result = NULL;
    Buf b = {0};
    Py_ssize_t nitems = PySequence_Fast_GET_SIZE(fields);
    Py_ssize_t elelen = 0;
    for (Py_ssize_t i = 0; i < nitems; i++)
        elelen += PyBytes_GET_SIZE(PySequence_Fast_GET_ITEM(fields, i));
    Py_ssize_t size = PyByteArray_GET_SIZE(buf);
    if (size < 1 || size + elelen >= limit) {
        result = PyLong_FromLong(-1);
        goto done;
    }
    PyObject *const *items = PySequence_Fast_ITEMS(fields);
    int same = same_fields(items, nitems, names);  /* SAMEFIELDS */
    if (put_entry(&b, msd, seqd, items, nitems, same) < 0 || buf_put(&b, "\xff", 1) < 0)
        goto done;
    if (PyByteArray_Resize(buf, size - 1 + (Py_ssize_t)b.len) < 0)
        goto done;
    memcpy(PyByteArray_AS_STRING(buf) + size - 1, b.data, b.len);
    result = PyLong_FromSsize_t(same ? nitems / 2 + 4 : nitems + 5);
done:
    PyMem_Free(b.data);
    Py_DECREF(fields);
    Py_DECREF(names);
    return result;
}

/* -- a run of XADD key * ... -------------------------------------------------------------- */

static PyObject *XADD_NAME; /* b"XADD": the propagated command's name */

/* Whether o is bytes equal to b. */
static inline int bytes_eq(PyObject *o, PyObject *b) {
    if (o == b)
        return 1;
    Py_ssize_t n = PyBytes_GET_SIZE(b);
    return PyBytes_CheckExact(o) && PyBytes_GET_SIZE(o) == n &&
           memcmp(PyBytes_AS_STRING(o), PyBytes_AS_STRING(b), (size_t)n) == 0;
}

/* The clock's reading (an int of nanoseconds) in *out; -1 with an exception set. */
static int read_clock(PyObject *clock, long long *out) {
    PyObject *t = PyObject_CallNoArgs(clock);
    if (t == NULL)
        return -1;
    *out = PyLong_AsLongLong(t);
    Py_DECREF(t);
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

/* Python's floor division by a positive d. */
static inline long long floor_div(long long n, long long d) {
    long long q = n / d;
    return (n % d != 0 && n < 0) ? q - 1 : q;
}

static int parse_digits(const char *p, Py_ssize_t n, Py_ssize_t *i, char stop, uint64_t *out);

/* An ID argument in the form XADD is propagated with, "ms-seq" in canonical decimal (no
 * sign, no leading zero, at most 19 digits a part): 1 with its parts in *ms and *seq. */
static int canonical_id(PyObject *arg, uint64_t *ms, uint64_t *seq) {
    if (!PyBytes_CheckExact(arg))
        return 0;
    const char *p = PyBytes_AS_STRING(arg);
    Py_ssize_t n = PyBytes_GET_SIZE(arg), i = 0;
    if (!parse_digits(p, n, &i, '-', ms) || i >= n || (p[0] == '0' && i > 1))
        return 0;
    Py_ssize_t seq_at = ++i;
    if (!parse_digits(p, n, &i, 0, seq) || i != n || (p[seq_at] == '0' && n - seq_at > 1))
        return 0;
    return 1;
}

PyDoc_STRVAR(xadd_run_doc,
"xadd_run(commands, j, key, name, buf, names, fixed, state, clock, recent, notable_us,\n"
"         effects, out) -> (j, start_ns, slow_us, slow_id, marks)\n\n"
"The loop over a run of `XADD key * field value ...` (stream_cmds.xadd_pipelined's), or\n"
"with clock None of `XADD key ms-seq field value ...` (the AOF replay's), from commands[j]\n"
"on, into the tail node buf of a stream (Stream.tail_appender's, whose arguments these\n"
"are). fixed: (master ms, master seq, the node's byte limit, its entry limit or 0, the first\n"
"entry's offset or -1 when the node keeps no seek marks, MARK_EVERY); state: [entries,\n"
"elements, count, length, last ms, last seq, clock ns], read at the start and written back\n"
"at the end, whatever happens.\n\n"
"For each command its entry goes in as append_entry puts it, and its effect `XADD key id\n"
"field value ...` is appended to effects unless effects is None. With `*`: the start is\n"
"state's clock reading and the ID the next one at that millisecond; the reply (the ID as a\n"
"bulk string) joins the others, which go to out as one bytes object; the clock is read\n"
"again, and the microseconds between go to recent. With a clock of None the ID is the\n"
"command's own, canonical and above the last one, and recent, notable_us and out are not\n"
"used.\n\n"
"Stops before a command of another shape (key, name, an option, an ID of another form,\n"
"arguments that are not bytes), one that append() must take (the node full, its count at\n"
"127, a sequence that would wrap, an ID not above the last), and after one that took\n"
"notable_us or more: slow_us is then its duration and slow_id its ID (else -1 and None).\n"
"start_ns is the start of the last command taken; marks the seek marks of the entries\n"
"added, for the caller to add to the node's.");

static PyObject *xadd_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError, "xadd_run takes 13 arguments");
        return NULL;
    }
    PyObject *commands = args[0], *key = args[2], *name = args[3], *buf = args[4],
             *names_arg = args[5], *fixed = args[6], *state = args[7], *clock = args[8],
             *recent = args[9], *effects = args[11], *out = args[12];
    int replay = clock == Py_None; /* the IDs are the commands' own */
    if (!PyList_CheckExact(commands) || !PyBytes_CheckExact(key) || !PyBytes_CheckExact(name) ||
        !PyByteArray_Check(buf) || !PyTuple_Check(fixed) || PyTuple_GET_SIZE(fixed) != 6 ||
        !PyList_CheckExact(state) || PyList_GET_SIZE(state) != 7 ||
        (!replay && (!PyList_CheckExact(recent) || !PyList_CheckExact(out))) ||
        (effects != Py_None && !PyList_CheckExact(effects))) {
        PyErr_SetString(PyExc_TypeError, "xadd_run: wrong argument types");
        return NULL;
    }
    Py_ssize_t j = PyLong_AsSsize_t(args[1]);
    int overflow;
    long long notable_us = PyLong_AsLongLongAndOverflow(args[10], &overflow);
    if (overflow > 0) /* (nothing is notable: Server.notable_us is 2**64 then) */
        notable_us = LLONG_MAX;
    uint64_t mms = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(fixed, 0));
    uint64_t mseq = PyLong_AsUnsignedLongLongMask(PyTuple_GET_ITEM(fixed, 1));
    Py_ssize_t limit = PyLong_AsSsize_t(PyTuple_GET_ITEM(fixed, 2));
    long long max_entries = PyLong_AsLongLong(PyTuple_GET_ITEM(fixed, 3));
    Py_ssize_t marks_from = PyLong_AsSsize_t(PyTuple_GET_ITEM(fixed, 4));
    long long mark_every = PyLong_AsLongLong(PyTuple_GET_ITEM(fixed, 5));
    long long total = PyLong_AsLongLong(PyList_GET_ITEM(state, 0));
    long long nele = PyLong_AsLongLong(PyList_GET_ITEM(state, 1));
    long long count = PyLong_AsLongLong(PyList_GET_ITEM(state, 2));
    long long length = PyLong_AsLongLong(PyList_GET_ITEM(state, 3));
    uint64_t last_ms = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(state, 4));
    uint64_t last_seq = PyLong_AsUnsignedLongLong(PyList_GET_ITEM(state, 5));
    long long now = PyLong_AsLongLong(PyList_GET_ITEM(state, 6));
    if (PyErr_Occurred())
        return NULL;
    if (mark_every < 1) {
        PyErr_SetString(PyExc_ValueError, "xadd_run: MARK_EVERY must be positive");
        return NULL;
    }
    PyObject *names = PySequence_Fast(names_arg, "names must be a sequence");
    if (names == NULL)
        return NULL;
    int failed = 0;
    Buf entry = {0}, replies = {0}, marks = {0};
    long long start = now, slow_us = -1;
    PyObject *slow_id = NULL;
    Py_ssize_t end = PyList_GET_SIZE(commands);
    uint64_t top = (uint64_t)-1;
    for (; j < end; j++) {
        PyObject *argv = PyList_GET_ITEM(commands, j);
        if (!PyList_CheckExact(argv))
            break;
        Py_ssize_t argc = PyList_GET_SIZE(argv);
        if (argc < 5 || !(argc & 1))
            break;
        PyObject *const *av = PySequence_Fast_ITEMS(argv);
        PyObject *id_arg = av[2];
        uint64_t ms, seq;
        if (!bytes_eq(av[1], key) || !bytes_eq(av[0], name))
            break;
        if (replay) {
            if (!canonical_id(id_arg, &ms, &seq) ||
                !(ms > last_ms || (ms == last_ms && seq > last_seq)))
                break;
        } else if (!PyBytes_CheckExact(id_arg) || PyBytes_GET_SIZE(id_arg) != 1 ||
                   PyBytes_AS_STRING(id_arg)[0] != '*') {
            break;
        }
        PyObject *const *items = av + 3;
        Py_ssize_t nitems = argc - 3, elelen = 0;
        int all_bytes = 1;
        for (Py_ssize_t i = 0; i < nitems; i++) {
            if (!PyBytes_CheckExact(items[i])) {
                all_bytes = 0;
                break;
            }
            elelen += PyBytes_GET_SIZE(items[i]);
        }
        if (!all_bytes || (max_entries && total >= max_entries) || count >= 127)
            break;
        if (!replay) { /* the clock's millisecond, or the next sequence in the last one's */
            long long now_ms = floor_div(now, 1000000);
            if (now_ms >= 0 && (uint64_t)now_ms > last_ms) {
                ms = (uint64_t)now_ms;
                seq = 0;
            } else if (last_seq < top) {
                ms = last_ms;
                seq = last_seq + 1;
            } else {
                break;
            }
        }
        Py_ssize_t size = PyByteArray_GET_SIZE(buf);
        if (size < 1 || size + elelen >= limit)
            break;
        int same = same_fields(items, nitems, names);
        entry.len = 0;
        if (put_entry(&entry, ms - mms, seq - mseq, items, nitems, same) < 0 ||
            buf_put(&entry, "\xff", 1) < 0 ||
            PyByteArray_Resize(buf, size - 1 + (Py_ssize_t)entry.len) < 0) {
            failed = 1;
            break;
        }
        memcpy(PyByteArray_AS_STRING(buf) + size - 1, entry.data, entry.len);
        if (marks_from >= 0 && total % mark_every == 0) {
            Py_ssize_t rel = size - 1 - marks_from; /* stream_seek.mark_bytes */
            if (rel <= 0xFFFF) {
                uint16_t mark = (uint16_t)rel;
                if (buf_put(&marks, &mark, 2) < 0) {
                    failed = 1; /* (the entry is in: count it below) */
                }
            }
        }
        nele += same ? nitems / 2 + 4 : nitems + 5;
        total++;
        count++;
        length++;
        last_ms = ms;
        last_seq = seq;
        start = now;
        if (failed) {
            j++;
            break;
        }
        /* The reply (with *), the effect, the duration (with *). */
        PyObject *id_obj = NULL;
        if (replay) {
            id_obj = id_arg; /* (canonical: the text the ID is formatted as) */
            Py_INCREF(id_obj);
        } else {
            char id[48];
            size_t idlen = u64_text(ms, id);
            id[idlen++] = '-';
            idlen += u64_text(seq, id + idlen);
            char head[24];
            head[0] = '$';
            size_t headlen = 1 + u64_text(idlen, head + 1);
            if (buf_put(&replies, head, headlen) < 0 || buf_put(&replies, "\r\n", 2) < 0 ||
                buf_put(&replies, id, idlen) < 0 || buf_put(&replies, "\r\n", 2) < 0 ||
                (id_obj = PyBytes_FromStringAndSize(id, (Py_ssize_t)idlen)) == NULL) {
                failed = 1;
                j++;
                break;
            }
        }
        if (effects != Py_None) {
            PyObject *effect = PyList_New(argc);
            if (effect == NULL) {
                Py_DECREF(id_obj);
                failed = 1;
                j++;
                break;
            }
            Py_INCREF(XADD_NAME);
            PyList_SET_ITEM(effect, 0, XADD_NAME);
            Py_INCREF(key);
            PyList_SET_ITEM(effect, 1, key);
            Py_INCREF(id_obj);
            PyList_SET_ITEM(effect, 2, id_obj);
            for (Py_ssize_t i = 0; i < nitems; i++) {
                Py_INCREF(items[i]);
                PyList_SET_ITEM(effect, 3 + i, items[i]);
            }
            int appended = PyList_Append(effects, effect);
            Py_DECREF(effect);
            if (appended < 0) {
                Py_DECREF(id_obj);
                failed = 1;
                j++;
                break;
            }
        }
        if (replay) {
            Py_DECREF(id_obj);
            continue;
        }
        long long later;
        PyObject *us_obj = NULL;
        if (read_clock(clock, &later) < 0 ||
            (us_obj = PyLong_FromLongLong(floor_div(later - start, 1000))) == NULL ||
            PyList_Append(recent, us_obj) < 0) {
            Py_XDECREF(us_obj);
            Py_DECREF(id_obj);
            failed = 1;
            j++;
            break;
        }
        Py_DECREF(us_obj);
        now = later;
        if (floor_div(later - start, 1000) >= notable_us) {
            slow_us = floor_div(later - start, 1000);
            slow_id = id_obj; /* (the reference passes to the result) */
            j++;
            break;
        }
        Py_DECREF(id_obj);
    }
    /* Written back whatever happened: the entries added are in the node. */
    PyObject *values[7] = {PyLong_FromLongLong(total), PyLong_FromLongLong(nele),
                           PyLong_FromLongLong(count), PyLong_FromLongLong(length),
                           PyLong_FromUnsignedLongLong(last_ms),
                           PyLong_FromUnsignedLongLong(last_seq), PyLong_FromLongLong(now)};
    for (int k = 0; k < 7; k++) {
        if (values[k] == NULL) {
            failed = 1;
            continue;
        }
        PyList_SetItem(state, k, values[k]); /* (steals the reference) */
    }
    if (replies.len) {
        PyObject *chunk = PyBytes_FromStringAndSize(replies.data, (Py_ssize_t)replies.len);
        if (chunk == NULL || PyList_Append(out, chunk) < 0)
            failed = 1;
        Py_XDECREF(chunk);
    }
    PyObject *marks_obj = PyBytes_FromStringAndSize(marks.data ? marks.data : "",
                                                    (Py_ssize_t)marks.len);
    PyMem_Free(entry.data);
    PyMem_Free(replies.data);
    PyMem_Free(marks.data);
    Py_DECREF(names);
    if (failed || marks_obj == NULL) {
        Py_XDECREF(marks_obj);
        Py_XDECREF(slow_id);
        return NULL;
    }
    if (slow_id == NULL) {
        slow_id = Py_None;
        Py_INCREF(Py_None);
    }
    return Py_BuildValue("(nLLNN)", j, start, slow_us, slow_id, marks_obj);
}

/* -- IDs as rax keys ------------------------------------------------------------------------ */

/* 1 to 19 ASCII digits from p[*i] to the byte `stop` (or the end); their value in *out.
 * 19 digits are always below 2**64. */
static int parse_digits(const char *p, Py_ssize_t n, Py_ssize_t *i, char stop, uint64_t *out) {
    Py_ssize_t start = *i, k = start;
    uint64_t value = 0;
    while (k < n && p[k] != stop) {
        if (p[k] < '0' || p[k] > '9' || k - start >= 19)
            return 0;
        value = value * 10 + (uint64_t)(p[k] - '0');
        k++;
    }
    if (k == start)
        return 0;
    *i = k;
    *out = value;
    return 1;
}

PyDoc_STRVAR(id_keys_doc,
"id_keys(args) -> list[bytes] | None\n\n"
"The 16-byte big-endian keys (ms, then seq) of IDs written 'ms-seq' with 1 to 19 digits\n"
"each; None if args is not a list of bytes in that form (the Python parser decides).");

static PyObject *id_keys(PyObject *self, PyObject *args) {
    if (!PyList_Check(args))
        Py_RETURN_NONE;
    Py_ssize_t count = PyList_GET_SIZE(args);
    PyObject *out = PyList_New(count);
    if (out == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < count; j++) {
        PyObject *arg = PyList_GET_ITEM(args, j);
        if (!PyBytes_CheckExact(arg))
            goto other;
        const char *p = PyBytes_AS_STRING(arg);
        Py_ssize_t n = PyBytes_GET_SIZE(arg), i = 0;
        uint64_t ms, seq;
        if (!parse_digits(p, n, &i, '-', &ms) || i >= n)
            goto other;
        i++; /* the '-' */
        if (!parse_digits(p, n, &i, '\0', &seq) || i != n)
            goto other;
        unsigned char key[16];
        for (int b = 0; b < 8; b++) {
            key[b] = (unsigned char)(ms >> (56 - 8 * b));
            key[8 + b] = (unsigned char)(seq >> (56 - 8 * b));
        }
        PyObject *item = PyBytes_FromStringAndSize((const char *)key, 16);
        if (item == NULL) {
            Py_DECREF(out);
            return NULL;
        }
        PyList_SET_ITEM(out, j, item);
    }
    return out;
other:
    Py_DECREF(out);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"append_entry", (PyCFunction)(void (*)(void))append_entry, METH_FASTCALL, append_entry_doc},
    {"xadd_run", (PyCFunction)(void (*)(void))xadd_run, METH_FASTCALL,
     xadd_run_doc},
    {"id_keys", id_keys, METH_O, id_keys_doc},
    {"encode_node", encode_node, METH_VARARGS, encode_node_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "The listpack loops of the bulk paths in C (see the comment at the top of _native.c).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__native(void) {
    if (XADD_NAME == NULL && (XADD_NAME = PyBytes_FromString("XADD")) == NULL)
        return NULL;
    return PyModule_Create(&module);
}
