/* The compiled fast path of the strace line grammar (rocrtrace/parse/strace.py).
 *
 * scan_line(line) tokenizes the line shapes that make up nearly every real
 * trace -- a `-f -ttt`/`-f -tt` prefix followed by a complete call, an
 * unfinished call or a resumed call with a well-formed argument list and a
 * plain, decorated or error result -- and returns None for anything else,
 * so the Python grammar stays the one definition and handles every other
 * shape.  What it returns must be exactly what the Python code computes for
 * the same line; tests/test_fast_paths.py parses the fixture corpus, real
 * strace logs and generated line soups both ways and compares the events.
 *
 * The argument splitter accepts exactly the language of tokens._WELL_FORMED
 * (strings, comments, fd decorations without quotes, escapes or "->", and
 * brackets nested at most six deep), with its possessive, never-backtracking
 * semantics; everything outside that language is refused here, as it is
 * refused by that regex, and goes to the general scanner.
 *
 * Only ASCII lines are scanned: they are bytes, and Python's whitespace is
 * the ASCII set below.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#define KIND_CALL 0
#define KIND_UNFINISHED 1
#define KIND_RESUMED 2
#define MAX_DEPTH 6             /* tokens._well_formed_patterns(6) */

typedef Py_ssize_t ssize;

static int is_ws(unsigned char c)
{
    /* str.isspace() / str.strip() / re's \s on ASCII */
    return c == ' ' || (c >= 9 && c <= 13) || (c >= 0x1c && c <= 0x1f);
}

static int is_digit(unsigned char c) { return c >= '0' && c <= '9'; }

static int is_hex(unsigned char c)
{
    return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

static int is_name_start(unsigned char c)
{
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || c == '_';
}

static int is_name_char(unsigned char c)   /* [\w#:] */
{
    return is_name_start(c) || is_digit(c) || c == '#' || c == ':';
}

/* 1 for the characters of the atom [^"<>(){}\[\],/]++ (filled at import) */
static unsigned char PLAIN[256];

static void init_plain(void)
{
    memset(PLAIN, 1, sizeof PLAIN);
    for (const char *c = "\"<>(){}[],/"; *c; c++)
        PLAIN[(unsigned char)*c] = 0;
}

static int is_opener(unsigned char c) { return c == '(' || c == '{' || c == '['; }
static int is_closer(unsigned char c) { return c == ')' || c == '}' || c == ']'; }

/* End of "(?:[^"\\]|\\.)*+"(?:\.\.\.)? whose quote is at i; -1 if none. */
static ssize string_end(const char *s, ssize i, ssize n)
{
    ssize k = i + 1;
    while (k < n) {
        char c = s[k];
        if (c == '\\') {
            if (k + 1 >= n || s[k + 1] == '\n')
                return -1;
            k += 2;
        } else if (c == '"') {
            k++;
            if (k + 3 <= n && memcmp(s + k, "...", 3) == 0)
                k += 3;
            return k;
        } else {
            k++;
        }
    }
    return -1;
}

/* End of <(?:[^<>"\\-]|-(?!>)|<(?:[^<>"\\-]|-(?!>))*+>)*+>(?:\(deleted\))?
 * whose '<' is at i; -1 if none. */
static ssize deco_end(const char *s, ssize i, ssize n)
{
    ssize k = i + 1;
    int depth = 1;
    while (k < n) {
        char c = s[k];
        if (c == '>') {
            k++;
            if (--depth == 0) {
                if (k + 9 <= n && memcmp(s + k, "(deleted)", 9) == 0)
                    k += 9;
                return k;
            }
        } else if (c == '<') {
            if (depth == 2)
                return -1;
            depth++;
            k++;
        } else if (c == '"' || c == '\\') {
            return -1;
        } else if (c == '-' && k + 1 < n && s[k + 1] == '>') {
            return -1;
        } else {
            k++;
        }
    }
    return -1;
}

/* End of the possessive match of (?:atom|nest)*+ from j (inside a bracket
 * group also ','), nest groups allowed `left` deep. */
static ssize well_formed(const char *s, ssize j, ssize n, int left, int nested)
{
    while (j < n) {
        unsigned char c = (unsigned char)s[j];
        if (PLAIN[c]) {
            j++;
            while (j < n && PLAIN[(unsigned char)s[j]])
                j++;
            continue;
        }
        ssize k;
        switch (c) {
        case '"':
            k = string_end(s, j, n);
            if (k < 0)
                return j;
            j = k;
            continue;
        case '<':
            k = deco_end(s, j, n);
            if (k < 0)
                return j;
            j = k;
            continue;
        case '/':
            if (j + 1 < n && s[j + 1] == '*') {
                const char *e = NULL;
                ssize q;
                for (q = j + 2; q + 1 < n; q++)
                    if (s[q] == '*' && s[q + 1] == '/') {
                        e = s + q;
                        break;
                    }
                if (e == NULL || memchr(s + j, '\n', e - (s + j)))
                    return j;
                j = q + 2;
            } else {
                j++;
            }
            continue;
        case '>':
            j++;
            continue;
        case ',':
            if (!nested)
                return j;
            j++;
            continue;
        default:
            if (is_opener(c) && left > 0) {
                k = well_formed(s, j + 1, n, left - 1, 1);
                if (k < n && is_closer((unsigned char)s[k])) {
                    j = k + 1;
                    continue;
                }
            }
            return j;
        }
    }
    return j;
}

static PyObject *stripped(const char *s, ssize a, ssize b)
{
    while (a < b && is_ws((unsigned char)s[a]))
        a++;
    while (b > a && is_ws((unsigned char)s[b - 1]))
        b--;
    return PyUnicode_FromStringAndSize(s + a, b - a);
}

/* tokens.scan_args on s[pos:n] for a well-formed list: a new list and
 * *close (-1: the list never closes); NULL with *close == -2 when the text
 * is outside the well-formed language (no exception set). */
static PyObject *scan_args(const char *s, ssize pos, ssize n, ssize *close)
{
    PyObject *args = PyList_New(0);
    if (args == NULL)
        return NULL;
    ssize j = pos;
    for (;;) {
        ssize e = well_formed(s, j, n, MAX_DEPTH, 0);
        PyObject *a;
        if (e >= n) {
            a = stripped(s, j, n);
            if (a == NULL)
                goto fail;
            if (PyUnicode_GET_LENGTH(a) > 0 && PyList_Append(args, a) < 0) {
                Py_DECREF(a);
                goto fail;
            }
            Py_DECREF(a);
            *close = -1;
            return args;
        }
        if (s[e] == ',' || s[e] == ')') {
            a = stripped(s, j, e);
            if (a == NULL)
                goto fail;
            int keep = s[e] == ',' || PyUnicode_GET_LENGTH(a) > 0 || PyList_GET_SIZE(args) > 0;
            if (keep && PyList_Append(args, a) < 0) {
                Py_DECREF(a);
                goto fail;
            }
            Py_DECREF(a);
            if (s[e] == ')') {
                *close = e;
                return args;
            }
            j = e + 1;
            continue;
        }
        Py_DECREF(args);
        *close = -2;
        return NULL;
    }
fail:
    Py_DECREF(args);
    *close = -3;
    return NULL;
}

static int ends_with(const char *s, ssize a, ssize n, const char *suffix)
{
    ssize m = (ssize)strlen(suffix);
    return n - a >= m && memcmp(s + n - m, suffix, m) == 0;
}

static int contains(const char *s, ssize a, ssize n, const char *needle)
{
    ssize m = (ssize)strlen(needle);
    for (ssize i = a; i + m <= n; i++)
        if (s[i] == needle[0] && memcmp(s + i, needle, m) == 0)
            return 1;
    return 0;
}

static PyObject *float_of(const char *s, ssize a, ssize b)
{
    char buf[64];
    if (b - a <= 0 || b - a >= (ssize)sizeof buf)
        return NULL;
    memcpy(buf, s + a, b - a);
    buf[b - a] = 0;
    double v = PyOS_string_to_double(buf, NULL, NULL);
    if (v == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return NULL;
    }
    return PyFloat_FromDouble(v);
}

struct result {
    PyObject *ret, *err, *rpath, *dur;   /* new references or NULL (None) */
};

static void result_clear(struct result *r)
{
    Py_CLEAR(r->ret);
    Py_CLEAR(r->err);
    Py_CLEAR(r->rpath);
    Py_CLEAR(r->dur);
}

/* Parser._result on s[pos:n]: 1 with *r filled, 0 to refuse the line. */
static int result(const char *s, ssize pos, ssize n, struct result *r)
{
    memset(r, 0, sizeof *r);
    ssize k = pos;
    while (k < n && is_ws((unsigned char)s[k]))
        k++;
    if (k >= n || s[k] != '=')
        return 0;
    k++;
    while (k < n && is_ws((unsigned char)s[k]))
        k++;
    ssize v0 = k;
    int unknown = 0, minus_one = 0;
    if (k + 2 < n && s[k] == '0' && s[k + 1] == 'x' && is_hex((unsigned char)s[k + 2])) {
        k += 2;
        while (k < n && is_hex((unsigned char)s[k]))
            k++;
    } else if (k < n && s[k] == '?') {
        unknown = 1;
        k++;
    } else {
        if (k < n && s[k] == '-')
            k++;
        if (k >= n || !is_digit((unsigned char)s[k]))
            return 0;
        while (k < n && is_digit((unsigned char)s[k]))
            k++;
    }
    if (!unknown) {
        char buf[48];
        if (k - v0 >= (ssize)sizeof buf)
            return 0;
        memcpy(buf, s + v0, k - v0);
        buf[k - v0] = 0;
        minus_one = strcmp(buf, "-1") == 0;
        r->ret = PyLong_FromString(buf, NULL, 0);     /* int(val, 0) */
        if (r->ret == NULL) {
            PyErr_Clear();
            return 0;
        }
        if (k < n && s[k] == '<') {
            ssize e = deco_end(s, k, n);
            /* "(deleted)" takes the Python code's other branches */
            if (e < 0 || s[e - 1] != '>' || ends_with(s, k, e - 1, "(deleted)"))
                goto refuse;
            /* decoration_path(): up to a nested <char M:m> / <pid comm> */
            ssize c0 = k + 1, c1 = e - 1, cut = -1;
            for (ssize q = c0; q < c1; q++)
                if (s[q] == '<') {
                    cut = q;
                    break;
                }
            if (cut > c0 && s[c1 - 1] == '>')
                c1 = cut;
            r->rpath = PyUnicode_FromStringAndSize(s + c0, c1 - c0);
            if (r->rpath == NULL)
                goto fail;
            k = e;
        }
    }
    /* the rest: [error text] [<duration>] */
    ssize rest = k, end = n;
    if (end > rest && s[end - 1] == '>') {
        ssize lt = -1;
        for (ssize q = end - 2; q >= rest; q--)
            if (s[q] == '<') {
                lt = q;
                break;
            }
        if (lt >= 0) {
            ssize d0 = lt + 1, d1 = end - 1, q = d0;
            int ok = 0, unavailable = 0;
            if (d1 - d0 == 11 && memcmp(s + d0, "unavailable", 11) == 0) {
                ok = unavailable = 1;
            } else if (q < d1 && is_digit((unsigned char)s[q])) {
                while (q < d1 && is_digit((unsigned char)s[q]))
                    q++;
                if (q < d1 && s[q] == '.') {
                    q++;
                    while (q < d1 && is_digit((unsigned char)s[q]))
                        q++;
                }
                ok = q == d1;
            }
            if (ok) {
                if (!unavailable) {
                    r->dur = float_of(s, d0, d1);
                    if (r->dur == NULL)
                        goto refuse;
                }
                while (lt > rest && is_ws((unsigned char)s[lt - 1]))
                    lt--;
                end = lt;
            }
        }
    }
    if (unknown || minus_one) {
        ssize q = rest;
        while (q < end && is_ws((unsigned char)s[q]))
            q++;
        ssize e0 = q;
        if (q < end && s[q] >= 'A' && s[q] <= 'Z') {
            q++;
            while (q < end && ((s[q] >= 'A' && s[q] <= 'Z') || is_digit((unsigned char)s[q])
                               || s[q] == '_'))
                q++;
        }
        if (q - e0 >= 2 && (q == end || is_ws((unsigned char)s[q]))) {
            r->err = PyUnicode_FromStringAndSize(s + e0, q - e0);
            if (r->err == NULL)
                goto fail;
            PyUnicode_InternInPlace(&r->err);
        } else if (minus_one) {
            goto refuse;        /* "(errno N)" or nothing: the Python code names it */
        }
    }
    return 1;
refuse:
    result_clear(r);
    return 0;
fail:
    PyErr_Clear();
    result_clear(r);
    return 0;
}

static PyObject *steal_or_none(PyObject *o)
{
    if (o == NULL)
        Py_RETURN_NONE;
    return o;
}

static PyObject *pack(int kind, long tid, PyObject *t, const char *s, ssize n0, ssize n1,
                      PyObject *args, struct result *r)
{
    PyObject *name = PyUnicode_FromStringAndSize(s + n0, n1 - n0);
    if (name == NULL) {
        Py_DECREF(t);
        Py_DECREF(args);
        if (r)
            result_clear(r);
        return NULL;
    }
    PyUnicode_InternInPlace(&name);
    PyObject *out = PyTuple_New(9);
    if (out == NULL) {
        Py_DECREF(name);
        Py_DECREF(t);
        Py_DECREF(args);
        if (r)
            result_clear(r);
        return NULL;
    }
    PyTuple_SET_ITEM(out, 0, PyLong_FromLong(kind));
    PyTuple_SET_ITEM(out, 1, PyLong_FromLong(tid));
    PyTuple_SET_ITEM(out, 2, t);
    PyTuple_SET_ITEM(out, 3, name);
    PyTuple_SET_ITEM(out, 4, args);
    if (r) {
        PyTuple_SET_ITEM(out, 5, steal_or_none(r->ret));
        PyTuple_SET_ITEM(out, 6, steal_or_none(r->err));
        PyTuple_SET_ITEM(out, 7, steal_or_none(r->rpath));
        PyTuple_SET_ITEM(out, 8, steal_or_none(r->dur));
    } else {
        for (int i = 5; i < 9; i++)
            PyTuple_SET_ITEM(out, i, steal_or_none(NULL));
    }
    for (int i = 0; i < 2; i++)
        if (PyTuple_GET_ITEM(out, i) == NULL) {
            Py_DECREF(out);
            return NULL;
        }
    return out;
}

#define UNFINISHED "<unfinished ...>"

static PyObject *refuse(PyObject *t)
{
    Py_XDECREF(t);
    Py_RETURN_NONE;
}

static PyObject *scan_line(PyObject *self, PyObject *line)
{
    if (!PyUnicode_Check(line)) {
        PyErr_SetString(PyExc_TypeError, "scan_line() takes a str");
        return NULL;
    }
    if (!PyUnicode_IS_ASCII(line))
        Py_RETURN_NONE;
    const char *s = (const char *)PyUnicode_DATA(line);
    ssize n = PyUnicode_GET_LENGTH(line);

    /* _COMMON_PREFIX: (\d{1,7}) +(?:(\d{9,}\.\d+)|(\d\d):(\d\d):(\d\d\.\d+)) (?=[\w<+-]) */
    ssize k = 0;
    long tid = 0;
    while (k < n && is_digit((unsigned char)s[k])) {
        if (k < 7)
            tid = tid * 10 + (s[k] - '0');
        k++;
    }
    if (k == 0 || k > 7 || k >= n || s[k] != ' ')
        Py_RETURN_NONE;
    while (k < n && s[k] == ' ')
        k++;
    ssize t0 = k;
    while (k < n && is_digit((unsigned char)s[k]))
        k++;
    PyObject *t = NULL;
    if (k - t0 >= 9 && k < n && s[k] == '.' && k + 1 < n && is_digit((unsigned char)s[k + 1])) {
        k++;
        while (k < n && is_digit((unsigned char)s[k]))
            k++;
        t = float_of(s, t0, k);
    } else if (k - t0 == 2 && k + 7 < n && s[k] == ':' && is_digit((unsigned char)s[k + 1])
               && is_digit((unsigned char)s[k + 2]) && s[k + 3] == ':'
               && is_digit((unsigned char)s[k + 4]) && is_digit((unsigned char)s[k + 5])
               && s[k + 6] == '.' && is_digit((unsigned char)s[k + 7])) {
        long h = (s[t0] - '0') * 10 + (s[t0 + 1] - '0');
        long mi = (s[k + 1] - '0') * 10 + (s[k + 2] - '0');
        ssize f0 = k + 4;
        k += 7;
        while (k < n && is_digit((unsigned char)s[k]))
            k++;
        PyObject *sec = float_of(s, f0, k);
        if (sec != NULL) {
            /* int(h) * 3600 + int(mi) * 60 + float(sec) */
            t = PyFloat_FromDouble((double)(h * 3600 + mi * 60) + PyFloat_AS_DOUBLE(sec));
            Py_DECREF(sec);
        }
    } else {
        Py_RETURN_NONE;
    }
    if (t == NULL) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    if (k + 1 >= n || s[k] != ' ')
        return refuse(t);
    k++;
    unsigned char b0 = (unsigned char)s[k];
    if (!(is_name_start(b0) || is_digit(b0) || b0 == '<' || b0 == '+' || b0 == '-'))
        return refuse(t);

    ssize body = k;
    if (b0 == '<') {
        /* <\.\.\. ([\w#:]+) resumed> */
        if (n - k < 5 || memcmp(s + k, "<... ", 5) != 0)
            return refuse(t);
        ssize n0 = k + 5, q = n0;
        while (q < n && is_name_char((unsigned char)s[q]))
            q++;
        ssize n1 = q;
        if (n1 == n0 || n - q < 9 || memcmp(s + q, " resumed>", 9) != 0)
            return refuse(t);
        ssize rest = q + 9;
        if ((n - rest >= 18 && memcmp(s + rest, " " UNFINISHED ")", 18) == 0)
            || (n - rest >= 17 && memcmp(s + rest, UNFINISHED ")", 17) == 0)
            || ends_with(s, rest, n, UNFINISHED))
            return refuse(t);
        ssize close;
        PyObject *cont = scan_args(s, rest, n, &close);
        if (cont == NULL) {
            PyErr_Clear();
            return refuse(t);
        }
        struct result r;
        if (close < 0 || !result(s, close + 1, n, &r)) {
            Py_DECREF(cont);
            return refuse(t);
        }
        return pack(KIND_RESUMED, tid, t, s, n0, n1, cont, &r);
    }
    if (!is_name_start(b0))
        return refuse(t);     /* +++, ---, [ Process …: the Python grammar */
    ssize q = k + 1;
    while (q < n && is_name_char((unsigned char)s[q]))
        q++;
    if (q >= n || s[q] != '(')
        return refuse(t);
    ssize n0 = k, n1 = q, args0 = q + 1, end = n;
    int unfinished = 0;
    if (ends_with(s, body, n, "...>")) {
        if (!ends_with(s, body, n, UNFINISHED))
            return refuse(t);   /* <detached ...>, <pid changed to …>: Python */
        end = n - (ssize)strlen(UNFINISHED);
        while (end > body && is_ws((unsigned char)s[end - 1]))
            end--;
        unfinished = 1;
        if (end < args0)
            return refuse(t);
    }
    if (contains(s, body, end, UNFINISHED ")"))
        return refuse(t);
    ssize close;
    PyObject *args = scan_args(s, args0, end, &close);
    if (args == NULL) {
        PyErr_Clear();
        return refuse(t);
    }
    if (unfinished)
        return pack(KIND_UNFINISHED, tid, t, s, n0, n1, args, NULL);
    struct result r;
    if (close < 0 || !result(s, close + 1, end, &r)) {
        Py_DECREF(args);
        return refuse(t);
    }
    return pack(KIND_CALL, tid, t, s, n0, n1, args, &r);
}

/* --- bracketed values: tokens.parse_value(tok) for {…} and […] ------------ */

static int ascii_name_start(unsigned char c) { return is_name_start(c); }

static int ascii_name_char(unsigned char c) { return is_name_start(c) || is_digit(c); }

static int has_bracket(const char *s, ssize a, ssize b)
{
    return memchr(s + a, '{', b - a) != NULL || memchr(s + a, '[', b - a) != NULL;
}

struct vctx {
    PyObject *scalar, *general;     /* tokens._scalar, tokens._value */
    Py_ssize_t max_depth;           /* tokens.MAX_NESTING */
};

static PyObject *value_at(PyObject *whole, const char *s, ssize a, ssize b,
                          const struct vctx *cx, Py_ssize_t depth);

/* tokens._value(tok, None, depth): the Python code, for what is not ours */
static PyObject *general(const struct vctx *cx, PyObject *tok, Py_ssize_t depth)
{
    PyObject *d = PyLong_FromSsize_t(depth);
    if (d == NULL)
        return NULL;
    PyObject *args[3] = {tok, Py_None, d};
    PyObject *r = PyObject_Vectorcall(cx->general, args, 3, NULL);
    Py_DECREF(d);
    return r;
}

/* parse_value(x) of the substring s[a:b]: the cache for scalars, this file
 * for bracketed values, the Python code (general) for everything else. */
static PyObject *sub_value(const char *s, ssize a, ssize b, const struct vctx *cx,
                           Py_ssize_t depth)
{
    PyObject *tok = PyUnicode_FromStringAndSize(s + a, b - a);
    if (tok == NULL)
        return NULL;
    PyObject *v;
    if (!has_bracket(s, a, b))
        v = PyObject_CallOneArg(cx->scalar, tok);
    else
        v = value_at(tok, s, a, b, cx, depth);
    Py_DECREF(tok);
    return v;
}

/* tokens._value(tok, None, depth) for a tok (= s[a:b], the str `whole`)
 * holding a bracket. */
static PyObject *value_at(PyObject *whole, const char *s, ssize a, ssize b,
                          const struct vctx *cx, Py_ssize_t depth)
{
    while (a < b && is_ws((unsigned char)s[a]))
        a++;
    while (b > a && is_ws((unsigned char)s[b - 1]))
        b--;
    if (b - a < 2 || (s[a] != '{' && s[a] != '[') || contains(s, a, b, "/*"))
        return general(cx, whole, depth);
    if (depth > cx->max_depth)
        return PyUnicode_FromStringAndSize(s + a, b - a);    /* too deep: raw text */
    /* _matching: the well-formed bracket group at a */
    ssize k = well_formed(s, a + 1, b, MAX_DEPTH - 1, 1);
    if (k >= b || !is_closer((unsigned char)s[k]))
        return general(cx, whole, depth);
    ssize end = k;
    depth++;
    if (end != b - 1) {
        ssize r = end + 1;
        while (r < b && is_ws((unsigned char)s[r]))
            r++;
        if (b - r >= 2 && s[r] == '=' && s[r + 1] == '>') {
            PyObject *x = sub_value(s, a, end + 1, cx, depth);
            if (x == NULL)
                return NULL;
            PyObject *y = sub_value(s, r + 2, b, cx, depth);
            if (y == NULL) {
                Py_DECREF(x);
                return NULL;
            }
            PyObject *t = PyTuple_Pack(2, x, y);
            Py_DECREF(x);
            Py_DECREF(y);
            return t;
        }
        return PyUnicode_FromStringAndSize(s + a, b - a);
    }
    /* _items: split the body at top-level commas, then the elements */
    int is_list = s[a] == '[';
    PyObject *out = is_list ? PyList_New(0) : PyDict_New();
    if (out == NULL)
        return NULL;
    ssize j = a + 1;
    for (;;) {
        ssize e = well_formed(s, j, end, MAX_DEPTH, 0);
        if (e != end && s[e] != ',') {
            Py_DECREF(out);
            return general(cx, whole, depth - 1);
        }
        ssize x0 = j, x1 = e;
        while (x0 < x1 && is_ws((unsigned char)s[x0]))
            x0++;
        while (x1 > x0 && is_ws((unsigned char)s[x1 - 1]))
            x1--;
        int last = e == end;
        /* empty items and "..." are skipped (an empty tail is not an item) */
        if (x1 > x0 && !(x1 - x0 == 3 && memcmp(s + x0, "...", 3) == 0)) {
            if (is_list) {
                PyObject *v = sub_value(s, x0, x1, cx, depth);
                if (v == NULL || PyList_Append(out, v) < 0) {
                    Py_XDECREF(v);
                    Py_DECREF(out);
                    return NULL;
                }
                Py_DECREF(v);
            } else {
                /* strip_name: [A-Za-z_][A-Za-z0-9_]{0,39}=(?![=>]) */
                ssize q = x0;
                if (ascii_name_start((unsigned char)s[q])) {
                    q++;
                    while (q < x1 && ascii_name_char((unsigned char)s[q]) && q - x0 < 40)
                        q++;
                }
                if (q > x0 && q < x1 && s[q] == '='
                        && !(q + 1 < x1 && (s[q + 1] == '=' || s[q + 1] == '>'))) {
                    PyObject *key = PyUnicode_FromStringAndSize(s + x0, q - x0);
                    if (key == NULL) {
                        Py_DECREF(out);
                        return NULL;
                    }
                    PyUnicode_InternInPlace(&key);
                    PyObject *v = sub_value(s, q + 1, x1, cx, depth);
                    if (v == NULL || PyDict_SetItem(out, key, v) < 0) {
                        Py_XDECREF(v);
                        Py_DECREF(key);
                        Py_DECREF(out);
                        return NULL;
                    }
                    Py_DECREF(v);
                    Py_DECREF(key);
                }
            }
        }
        if (last)
            break;
        j = e + 1;
    }
    return out;
}

static PyObject *bracketed(PyObject *self, PyObject *const *argv, Py_ssize_t argc)
{
    if (argc != 5 || !PyUnicode_Check(argv[0])) {
        PyErr_SetString(PyExc_TypeError,
                        "bracketed(tok, scalar, general, depth, max_depth)");
        return NULL;
    }
    struct vctx cx = {argv[1], argv[2], PyLong_AsSsize_t(argv[4])};
    Py_ssize_t depth = PyLong_AsSsize_t(argv[3]);
    if ((cx.max_depth == -1 || depth == -1) && PyErr_Occurred())
        return NULL;
    PyObject *tok = argv[0];
    if (!PyUnicode_IS_ASCII(tok))
        return general(&cx, tok, depth);
    const char *s = (const char *)PyUnicode_DATA(tok);
    return value_at(tok, s, 0, PyUnicode_GET_LENGTH(tok), &cx, depth);
}

static PyMethodDef methods[] = {
    {"bracketed", (PyCFunction)(void (*)(void))bracketed, METH_FASTCALL,
     "bracketed(tok, scalar, general, depth, max_depth) -> tokens._parse(tok, None,\n"
     "depth) for a tok holding '{' or '[': lists, dicts and (entry, exit) pairs built\n"
     "here, scalars from scalar(text), anything outside the well-formed language\n"
     "from general(text, None, depth); deeper than max_depth: the text."},
    {"scan_line", scan_line, METH_O,
     "scan_line(line) -> (kind, tid, time, name, args, ret, err, ret_path, dur) or None\n\n"
     "kind: 0 a complete call, 1 an unfinished call, 2 a resumed call."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_scan",
    "Compiled fast path of the strace line grammar (see rocrtrace/parse/strace.py).",
    -1, methods,
};

PyMODINIT_FUNC PyInit__scan(void)
{
    init_plain();
    return PyModule_Create(&module);
}
