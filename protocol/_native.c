/* protocol._native: the check that RESP commands read by hiredis are, byte for byte, the
 * frames they came from, and the encoding of a command as RESP, in C.
 *
 * How it works. hiredis reads RESP faster than any Python loop, but it accepts forms Redis
 * does not (other types where bulk strings belong, lengths with leading zeros, ...). So the
 * request reader (protocol/reader.py) and the AOF loader (server/persistence/aof_parse.py)
 * keep what hiredis read only where the bytes are exactly the canonical encoding of those
 * commands, and the Python rules read the rest. frames_end compares in place, with no copy:
 * the per-argument part of every pipelined command's reading. protocol/native.py imports it
 * when it was built and XSTREAMD_PURE_PYTHON is unset; both callers keep their Python
 * checks as the fallback, and the tests run both.
 *
 * encode_command writes a command as clients send it, which is what every write costs on
 * its way to the AOF and the replicas (protocol/encoder.py's encode_command calls it first,
 * its Python loop being the fallback for arguments that are not bytes); encode_commands
 * writes a run of them (a pipeline of XADDs propagated together) into one bytes object.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* "<c><n>\r\n" at p[*off] exactly (no sign, no leading zero); advances *off. */
static int match_header(const uint8_t *p, size_t end, size_t *off, char c, size_t n) {
    size_t i = *off;
    if (i >= end || p[i] != (uint8_t)c)
        return 0;
    i++;
    size_t start = i, value = 0;
    while (i < end && p[i] >= '0' && p[i] <= '9') {
        if (i - start >= 19) /* (longer than any length a list or bytes object has) */
            return 0;
        value = value * 10 + (size_t)(p[i] - '0');
        i++;
    }
    /* Digits, none of them a leading zero, then CRLF: the decimal text of n and no other. */
    if (i == start || (p[start] == '0' && i - start > 1) || value != n || i + 2 > end ||
        p[i] != '\r' || p[i + 1] != '\n')
        return 0;
    *off = i + 2;
    return 1;
}

PyDoc_STRVAR(frames_end_doc,
"frames_end(buf, pos, commands) -> int\n\n"
"Where the commands end in buf if buf holds, from pos, exactly their RESP as encode_command\n"
"writes it (a '*' array of '$' bulk strings each, lengths in plain decimal; an empty list is\n"
"'*0'); -1 if it does not, or if a command is not a list of bytes.");

static PyObject *frames_end(PyObject *self, PyObject *args) {
    Py_buffer view;
    Py_ssize_t pos;
    PyObject *cmds;
    if (!PyArg_ParseTuple(args, "y*nO!", &view, &pos, &PyList_Type, &cmds))
        return NULL;
    const uint8_t *p = view.buf;
    size_t end = (size_t)view.len, off = (size_t)pos;
    Py_ssize_t result = -1;
    if (pos < 0 || off > end)
        goto done;
    for (Py_ssize_t i = 0; i < PyList_GET_SIZE(cmds); i++) {
        PyObject *cmd = PyList_GET_ITEM(cmds, i);
        if (!PyList_Check(cmd))
            goto done;
        Py_ssize_t argc = PyList_GET_SIZE(cmd);
        if (!match_header(p, end, &off, '*', (size_t)argc))
            goto done;
        for (Py_ssize_t j = 0; j < argc; j++) {
            PyObject *arg = PyList_GET_ITEM(cmd, j);
            if (!PyBytes_Check(arg))
                goto done;
            size_t n = (size_t)PyBytes_GET_SIZE(arg);
            if (!match_header(p, end, &off, '$', n) || off + n + 2 > end ||
                memcmp(p + off, PyBytes_AS_STRING(arg), n) != 0 || p[off + n] != '\r' ||
                p[off + n + 1] != '\n')
                goto done;
            off += n + 2;
        }
    }
    result = (Py_ssize_t)off;
done:
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(result);
}

/* The decimal text of n at out; returns its end. */
static char *put_decimal(char *out, size_t n) {
    char digits[24];
    int k = 0;
    do {
        digits[k++] = (char)('0' + n % 10);
        n /= 10;
    } while (n);
    while (k)
        *out++ = digits[--k];
    return out;
}

static size_t decimal_width(size_t n) {
    size_t width = 1;
    while (n >= 10) {
        n /= 10;
        width++;
    }
    return width;
}

/* The size of argv's RESP; 0 when argv is not a list of bytes. */
static size_t command_size(PyObject *argv) {
    if (!PyList_Check(argv))
        return 0;
    Py_ssize_t argc = PyList_GET_SIZE(argv);
    size_t size = 3 + decimal_width((size_t)argc);
    for (Py_ssize_t j = 0; j < argc; j++) {
        PyObject *arg = PyList_GET_ITEM(argv, j);
        if (!PyBytes_CheckExact(arg))
            return 0;
        size_t n = (size_t)PyBytes_GET_SIZE(arg);
        size += 5 + decimal_width(n) + n;
    }
    return size;
}

/* argv's RESP at w (command_size's bytes); returns its end. */
static char *put_command(char *w, PyObject *argv) {
    Py_ssize_t argc = PyList_GET_SIZE(argv);
    *w++ = '*';
    w = put_decimal(w, (size_t)argc);
    *w++ = '\r';
    *w++ = '\n';
    for (Py_ssize_t j = 0; j < argc; j++) {
        PyObject *arg = PyList_GET_ITEM(argv, j);
        size_t n = (size_t)PyBytes_GET_SIZE(arg);
        *w++ = '$';
        w = put_decimal(w, n);
        *w++ = '\r';
        *w++ = '\n';
        memcpy(w, PyBytes_AS_STRING(arg), n);
        w += n;
        *w++ = '\r';
        *w++ = '\n';
    }
    return w;
}

PyDoc_STRVAR(encode_command_doc,
"encode_command(argv) -> bytes | None\n\n"
"argv (a list of bytes) as a RESP array of bulk strings; None when argv is not a list or\n"
"an argument is not bytes (the caller's Python encoder handles those).");

static PyObject *encode_command(PyObject *self, PyObject *argv) {
    size_t size = command_size(argv);
    if (size == 0)
        Py_RETURN_NONE;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)size);
    if (out == NULL)
        return NULL;
    put_command(PyBytes_AS_STRING(out), argv);
    return out;
}

PyDoc_STRVAR(encode_commands_doc,
"encode_commands(argvs) -> bytes | None\n\n"
"Every argv of the list argvs encoded as encode_command does, one after the other, in one\n"
"bytes object; None when one of them is not a list of bytes.");

static PyObject *encode_commands(PyObject *self, PyObject *argvs) {
    if (!PyList_Check(argvs))
        Py_RETURN_NONE;
    Py_ssize_t count = PyList_GET_SIZE(argvs);
    size_t total = 0;
    for (Py_ssize_t k = 0; k < count; k++) {
        size_t size = command_size(PyList_GET_ITEM(argvs, k));
        if (size == 0)
            Py_RETURN_NONE;
        total += size;
    }
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (out == NULL)
        return NULL;
    char *w = PyBytes_AS_STRING(out);
    for (Py_ssize_t k = 0; k < count; k++)
        w = put_command(w, PyList_GET_ITEM(argvs, k));
    return out;
}

PyDoc_STRVAR(has_big_count_doc,
"has_big_count(data) -> bool\n\n"
"Whether data holds '*' followed by 4 digits (the request reader's _BIG_COUNT_RE): an array\n"
"header hiredis must not be given before its elements are there.");

static PyObject *has_big_count(PyObject *self, PyObject *arg) {
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0)
        return NULL;
    const char *p = view.buf, *end = p + view.len;
    int found = 0;
    while (p < end) {
        const char *star = memchr(p, '*', (size_t)(end - p));
        if (star == NULL)
            break;
        if (end - star >= 5 && star[1] >= '0' && star[1] <= '9' && star[2] >= '0' &&
            star[2] <= '9' && star[3] >= '0' && star[3] <= '9' && star[4] >= '0' &&
            star[4] <= '9') {
            found = 1;
            break;
        }
        p = star + 1;
    }
    PyBuffer_Release(&view);
    return PyBool_FromLong(found);
}

static PyMethodDef methods[] = {
    {"frames_end", frames_end, METH_VARARGS, frames_end_doc},
    {"encode_command", encode_command, METH_O, encode_command_doc},
    {"encode_commands", encode_commands, METH_O, encode_commands_doc},
    {"has_big_count", has_big_count, METH_O, has_big_count_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "RESP frames checked and commands encoded in C (see the comment at the top of _native.c).", -1, methods,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
