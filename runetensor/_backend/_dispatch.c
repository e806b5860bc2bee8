/*
 * Optional per-call fast path of Tensor's operators (runetensor._backend._dispatch).
 *
 * `a + b`, `a * 2.0`, `-a`, `a < b`... on small tensors spend most of their time in Python: the
 * dunder, the backend's `binary`, its dtype and size checks, the result's construction.  This module
 * makes method descriptors (installed on Tensor by runetensor/_fastdispatch.py) that handle the
 * common case in C and hand everything else to the Python method they replace, unchanged:
 *
 *   - `self` (and a tensor operand) of exactly type Tensor, on the NumPy backend object itself,
 *     whose handle is exactly an ndarray of fewer than `fast_min` elements (larger ones take the
 *     backend's threaded fast paths);
 *   - a tensor operand of the very same DType, or an exact Python float / int that the dtype
 *     absorbs, the dtype being one of the op's list (plain NumPy dtypes: the installer leaves out
 *     bool, complex, float16 and the ml_dtypes formats);
 *   - nothing patched: Tensor's `_data`/`_dtype`/`_backend` slots are the plain member slots (an
 *     rt.jit trace replaces `_backend` while it runs), and the backend's `binary`/`unary` are its
 *     class's (rt.debug_nans puts wrappers on the instance).
 *
 * Then it calls the ufunc the Python path calls (np.add, np.true_divide for float division,
 * np.negative...) and builds the result Tensor: the same object the Python path returns.  A ufunc
 * that raises TypeError, ValueError or OverflowError (a shape mismatch, an int out of range) goes to
 * the Python method, which words the error; anything else propagates, as in the Python path.
 *
 * No NumPy C API: the ndarray's size is read from its object header (`nd`, `dimensions`, the layout
 * NumPy has documented since 1.7), and `setup` checks that layout on a probe array first; if the
 * check fails, nothing is installed.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <stdint.h>
#include <string.h>

/* the head of NumPy's PyArrayObject_fields */
typedef struct {
    PyObject_HEAD
    char *data;
    int nd;
    Py_ssize_t *dimensions;
    Py_ssize_t *strides;
    PyObject *base;
    PyObject *descr;
    int flags;
} ArrayHead;
#define ARRAY_C_CONTIGUOUS 0x0001

#define NOPS 16
#define MAXDT 16

typedef struct {
    PyObject *ufunc;     /* the ufunc the Python path calls */
    PyObject *fallback;  /* the Python method this replaces: fallback(self, *args) */
    PyObject *result;    /* the result's DType, or NULL: the operand's */
    int reflected;       /* scalar op self: ufunc(other, self) */
    int unary;
    int getitem;         /* t[key] of ints, slices and None: NumPy's view */
    int nsame, nfloat, nint;
    PyObject *same[MAXDT], *flt[MAXDT], *integer[MAXDT];  /* DTypes allowed per operand kind */
} OpSpec;

static OpSpec OPS[NOPS];
static int nops = 0;

static PyTypeObject *tensor_type = NULL;
static PyTypeObject *ndarray_type = NULL;
static PyObject *np_backend = NULL, *asarray = NULL;
static PyObject *slot_data = NULL, *slot_dtype = NULL, *slot_backend = NULL;
static PyObject *meth_binary = NULL, *meth_unary = NULL, *meth_reshape = NULL, *meth_permute = NULL;
static PyObject *s_data, *s_dtype, *s_backend, *s_binary, *s_unary, *s_dtype_attr, *s_base_attr;
static PyObject *s_reshape, *s_permute, *s_transpose, *s_copy, *kw_copy;
static Py_ssize_t off_data, off_dtype, off_backend;
static Py_ssize_t fast_min = 0;
static unsigned int tensor_tag = 0, backend_tag = 0;
static int ready = 0;

/* NumPy's floating-point error state is a context variable: the Python path runs its ufuncs under
 * np.errstate(all="ignore") (the contract: no primitive prints warnings), and so does every ufunc call
 * here, by setting that variable to errstate's "ignore" value around the call (set_quiet).  Until
 * set_quiet has run, the fast paths stay off. */
static PyObject *quiet_var = NULL, *quiet_val = NULL;

static PyObject *call_quiet(PyObject *f, PyObject *const *argv, size_t n)
{
    PyObject *tok = PyContextVar_Set(quiet_var, quiet_val);
    if (tok == NULL)
        return NULL;
    PyObject *r = PyObject_Vectorcall(f, argv, n, NULL);
    if (r != NULL) {
        int bad = PyContextVar_Reset(quiet_var, tok) < 0;
        Py_DECREF(tok);
        if (bad)
            Py_CLEAR(r);
        return r;
    }
    PyObject *et, *ev, *tb;  /* keep the ufunc's exception across the reset */
    PyErr_Fetch(&et, &ev, &tb);
    if (PyContextVar_Reset(quiet_var, tok) < 0) {
        Py_XDECREF(et);
        Py_XDECREF(ev);
        Py_XDECREF(tb);
    } else {
        PyErr_Restore(et, ev, tb);
    }
    Py_DECREF(tok);
    return NULL;
}

/* set_quiet(var, value): NumPy's error-state context variable and its value under errstate(all="ignore") */
static PyObject *set_quiet(PyObject *mod, PyObject *args)
{
    PyObject *var, *val;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OO", &var, &val))
        return NULL;
    if (!PyContextVar_CheckExact(var)) {
        PyErr_SetString(PyExc_TypeError, "_dispatch.set_quiet: var must be a contextvars.ContextVar");
        return NULL;
    }
    Py_XSETREF(quiet_var, Py_NewRef(var));
    Py_XSETREF(quiet_val, Py_NewRef(val));
    Py_RETURN_NONE;
}

#define SLOT(o, off) (*(PyObject **)((char *)(o) + (off)))

/* True when nothing the fast path skips has been patched since the last check. */
static int env_ok(void)
{
    PyTypeObject *bt = Py_TYPE(np_backend);
    if (tensor_tag == 0 || tensor_type->tp_version_tag != tensor_tag || bt->tp_version_tag != backend_tag) {
        /* a type changed (or its version tag was dropped): check the attributes again */
        if (_PyType_Lookup(tensor_type, s_data) != slot_data || _PyType_Lookup(tensor_type, s_dtype) != slot_dtype ||
            _PyType_Lookup(tensor_type, s_backend) != slot_backend || _PyType_Lookup(bt, s_binary) != meth_binary ||
            _PyType_Lookup(bt, s_unary) != meth_unary || _PyType_Lookup(bt, s_reshape) != meth_reshape ||
            _PyType_Lookup(bt, s_permute) != meth_permute)
            return 0;
        if (!(tensor_type->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG) || !(bt->tp_flags & Py_TPFLAGS_VALID_VERSION_TAG)) {
            tensor_tag = 0;  /* no tag to remember: check every time */
        } else {
            tensor_tag = tensor_type->tp_version_tag;
            backend_tag = bt->tp_version_tag;
        }
    }
    PyObject **dp = _PyObject_GetDictPtr(np_backend);
    if (dp != NULL && *dp != NULL) {
        if (PyDict_GetItemWithError(*dp, s_binary) != NULL || PyDict_GetItemWithError(*dp, s_unary) != NULL ||
            PyDict_GetItemWithError(*dp, s_reshape) != NULL || PyDict_GetItemWithError(*dp, s_permute) != NULL)
            return 0;
        if (PyErr_Occurred()) {
            PyErr_Clear();
            return 0;
        }
    }
    return 1;
}

static int small_array(PyObject *a)
{
    if (Py_TYPE(a) != ndarray_type)
        return 0;
    ArrayHead *h = (ArrayHead *)a;
    for (int i = 0; i < h->nd; i++)
        if (h->dimensions[i] == 0)
            return 1;  /* empty */
    Py_ssize_t n = 1;
    for (int i = 0; i < h->nd; i++) {
        if (h->dimensions[i] >= fast_min)  /* (before the product: no overflow) */
            return 0;
        n *= h->dimensions[i];
        if (n >= fast_min)
            return 0;
    }
    return 1;
}

static int allowed(PyObject *const *list, int n, PyObject *dt)
{
    for (int i = 0; i < n; i++)
        if (list[i] == dt)
            return 1;
    return 0;
}

static PyObject *fallback(OpSpec *s, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    PyObject *small[4], **argv = small;
    Py_ssize_t total = nargs + (kwnames ? PyTuple_GET_SIZE(kwnames) : 0);
    if (total + 1 > 4) {
        argv = PyMem_Malloc(sizeof(PyObject *) * (size_t)(total + 1));
        if (argv == NULL)
            return PyErr_NoMemory();
    }
    argv[0] = self;
    for (Py_ssize_t i = 0; i < total; i++)
        argv[i + 1] = args[i];
    PyObject *r = PyObject_Vectorcall(s->fallback, argv, (size_t)nargs + 1, kwnames);
    if (argv != small)
        PyMem_Free(argv);
    return r;
}

static PyObject *make_tensor(PyObject *r, PyObject *dtype)
{
    if (Py_TYPE(r) != ndarray_type) {  /* a 0-d result is a NumPy scalar: a 0-d array, as the Python path */
        PyObject *a = PyObject_CallOneArg(asarray, r);
        Py_DECREF(r);
        if (a == NULL)
            return NULL;
        r = a;
    }
    PyObject *t = tensor_type->tp_alloc(tensor_type, 0);
    if (t == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    SLOT(t, off_data) = r;  /* the reference of r moves into the slot */
    Py_INCREF(dtype);
    SLOT(t, off_dtype) = dtype;
    Py_INCREF(np_backend);
    SLOT(t, off_backend) = np_backend;
    return t;
}

/* t[key] for a key of exact ints in range, slices of exact int / None bounds and None: NumPy's basic
 * indexing gives the view the Python path builds from its normalised key (the same start, step and
 * length per axis).  A negative-step slice that starts before the axis (empty) is normalised to an
 * empty positive-step slice there (other strides): the Python path takes it, and every other key. */
static PyObject *getitem(PyObject *self, PyObject *key)
{
    PyObject *sd = SLOT(self, off_data), *sdt = SLOT(self, off_dtype);
    if (sd == NULL || sdt == NULL || SLOT(self, off_backend) != np_backend || Py_TYPE(sd) != ndarray_type)
        return NULL;
    ArrayHead *h = (ArrayHead *)sd;
    PyObject *const *items;
    Py_ssize_t n;
    if (PyTuple_CheckExact(key)) {
        n = PyTuple_GET_SIZE(key);
        items = &PyTuple_GET_ITEM(key, 0);
    } else {
        n = 1;
        items = &key;
    }
    if (n > 32)
        return NULL;
    int ax = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *k = items[i];
        if (k == Py_None)
            continue;
        if (ax >= h->nd)
            return NULL;
        Py_ssize_t dim = h->dimensions[ax];
        if (PyLong_CheckExact(k)) {
            int overflow = 0;
            long long v = PyLong_AsLongLongAndOverflow(k, &overflow);
            if (overflow || (v == -1 && PyErr_Occurred())) {
                PyErr_Clear();
                return NULL;
            }
            if (v < -(long long)dim || v >= (long long)dim)
                return NULL;
        } else if (Py_IS_TYPE(k, &PySlice_Type)) {
            PySliceObject *sl = (PySliceObject *)k;
            if ((sl->start != Py_None && !PyLong_CheckExact(sl->start)) ||
                (sl->stop != Py_None && !PyLong_CheckExact(sl->stop)) ||
                (sl->step != Py_None && !PyLong_CheckExact(sl->step)))
                return NULL;
            Py_ssize_t start, stop, step;
            if (PySlice_Unpack(k, &start, &stop, &step) < 0) {  /* step 0 */
                PyErr_Clear();
                return NULL;
            }
            if (step < 0) {
                PySlice_AdjustIndices(dim, &start, &stop, step);
                if (start < 0)
                    return NULL;
            }
        } else {
            return NULL;
        }
        ax++;
    }
    PyObject *full = PyTuple_New(n + 1);
    if (full == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        Py_INCREF(items[i]);
        PyTuple_SET_ITEM(full, i, items[i]);
    }
    Py_INCREF(Py_Ellipsis);
    PyTuple_SET_ITEM(full, n, Py_Ellipsis);  /* keeps an all-int key a 0-d view, as the backend's view_index */
    PyObject *r = PyObject_GetItem(sd, full);
    Py_DECREF(full);
    if (r == NULL) {
        PyErr_Clear();
        return NULL;
    }
    if (Py_TYPE(r) != ndarray_type) {
        Py_DECREF(r);
        return NULL;
    }
    return make_tensor(r, sdt);
}

static PyObject *run(int i, PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames)
{
    OpSpec *s = &OPS[i];
    if (Py_TYPE(self) != tensor_type || nargs != (s->unary ? 0 : 1) || kwnames != NULL || !env_ok())
        return fallback(s, self, args, nargs, kwnames);
    if (s->getitem) {
        PyObject *t = getitem(self, args[0]);
        if (t != NULL || PyErr_Occurred())
            return t;
        return fallback(s, self, args, nargs, kwnames);
    }
    PyObject *sd = SLOT(self, off_data), *sdt = SLOT(self, off_dtype);
    if (sd == NULL || sdt == NULL || SLOT(self, off_backend) != np_backend || !small_array(sd))
        return fallback(s, self, args, nargs, kwnames);
    PyObject *r;
    if (s->unary) {
        if (!allowed(s->same, s->nsame, sdt))
            return fallback(s, self, args, nargs, kwnames);
        r = call_quiet(s->ufunc, &sd, 1);
    } else {
        PyObject *o = args[0], *argv[2];
        PyTypeObject *ot = Py_TYPE(o);
        if (ot == tensor_type && !s->reflected) {
            PyObject *od = SLOT(o, off_data);
            if (od == NULL || SLOT(o, off_dtype) != sdt || SLOT(o, off_backend) != np_backend || !small_array(od) ||
                !allowed(s->same, s->nsame, sdt))
                return fallback(s, self, args, nargs, kwnames);
            o = od;
        } else if (ot == &PyFloat_Type) {
            if (!allowed(s->flt, s->nfloat, sdt))
                return fallback(s, self, args, nargs, kwnames);
        } else if (ot == &PyLong_Type) {
            if (!allowed(s->integer, s->nint, sdt))
                return fallback(s, self, args, nargs, kwnames);
        } else {
            return fallback(s, self, args, nargs, kwnames);
        }
        if (s->reflected) {
            argv[0] = o;
            argv[1] = sd;
        } else {
            argv[0] = sd;
            argv[1] = o;
        }
        r = call_quiet(s->ufunc, argv, 2);
    }
    if (r == NULL) {
        if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_ValueError) ||
            PyErr_ExceptionMatches(PyExc_OverflowError)) {
            PyErr_Clear();
            return fallback(s, self, args, nargs, kwnames);  /* the Python path words the error */
        }
        return NULL;
    }
    return make_tensor(r, s->result ? s->result : sdt);
}

#define OPFN(k) \
    static PyObject *op_##k(PyObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kw) \
    { return run(k, self, args, nargs, kw); }
OPFN(0) OPFN(1) OPFN(2) OPFN(3) OPFN(4) OPFN(5) OPFN(6) OPFN(7)
OPFN(8) OPFN(9) OPFN(10) OPFN(11) OPFN(12) OPFN(13) OPFN(14) OPFN(15)

static PyMethodDef OPDEFS[NOPS];
static _PyCFunctionFastWithKeywords OPFNS[NOPS] = {op_0, op_1, op_2, op_3, op_4, op_5, op_6, op_7,
                                      op_8, op_9, op_10, op_11, op_12, op_13, op_14, op_15};

static int fill(PyObject **dst, int *n, PyObject *seq)
{
    PyObject *t = PySequence_Tuple(seq);
    if (t == NULL)
        return -1;
    Py_ssize_t k = PyTuple_GET_SIZE(t);
    if (k > MAXDT) {
        Py_DECREF(t);
        PyErr_SetString(PyExc_ValueError, "_dispatch.add_op: too many dtypes");
        return -1;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        dst[i] = PyTuple_GET_ITEM(t, i);
        Py_INCREF(dst[i]);
    }
    *n = (int)k;
    Py_DECREF(t);
    return 0;
}

static Py_ssize_t member_offset(PyObject *d)
{
    if (!Py_IS_TYPE(d, &PyMemberDescr_Type)) {
        PyErr_SetString(PyExc_TypeError, "_dispatch.setup: expected the member descriptors of Tensor's slots");
        return -1;
    }
    PyMemberDef *m = ((PyMemberDescrObject *)d)->d_member;
    if (m->type != T_OBJECT_EX || (m->flags & READONLY)) {
        PyErr_SetString(PyExc_TypeError, "_dispatch.setup: a slot is not a plain object slot");
        return -1;
    }
    return m->offset;
}

/* setup(Tensor, ndarray, probe, backend, asarray, fast_min): check the layouts, remember the objects. */
static PyObject *setup(PyObject *mod, PyObject *args)
{
    PyObject *tt, *nt, *probe, *be, *asa;
    Py_ssize_t fm;
    (void)mod;
    if (ready) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch.setup: already set up");
        return NULL;
    }
    if (quiet_var == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch.setup: call set_quiet first (NumPy's error state)");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "O!O!OOOn", &PyType_Type, &tt, &PyType_Type, &nt, &probe, &be, &asa, &fm))
        return NULL;
    /* the probe is np.empty((2, 3, 5), np.int8)[:, ::2]: nd 3, dimensions (2, 2, 5), strides (15, 10, 1) */
    if (Py_TYPE(probe) != (PyTypeObject *)nt) {
        PyErr_SetString(PyExc_TypeError, "_dispatch.setup: the probe must be an ndarray");
        return NULL;
    }
    ArrayHead *h = (ArrayHead *)probe;
    if (h->nd != 3 || h->dimensions[0] != 2 || h->dimensions[1] != 2 || h->dimensions[2] != 5 ||
        h->strides[0] != 15 || h->strides[1] != 10 || h->strides[2] != 1) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch.setup: this NumPy's array layout is not the one expected");
        return NULL;
    }
    PyObject *pd = PyObject_GetAttr(probe, s_dtype_attr), *pb = PyObject_GetAttr(probe, s_base_attr);
    int same = pd != NULL && pb != NULL && h->descr == pd && h->base == pb && !(h->flags & ARRAY_C_CONTIGUOUS);
    Py_XDECREF(pd);
    Py_XDECREF(pb);
    if (!same) {
        PyErr_Clear();
        PyErr_SetString(PyExc_RuntimeError, "_dispatch.setup: this NumPy's array layout is not the one expected");
        return NULL;
    }
    PyObject *d = PyObject_GetAttr(tt, s_data), *dt = PyObject_GetAttr(tt, s_dtype);
    PyObject *db = PyObject_GetAttr(tt, s_backend);
    PyObject *mb = PyObject_GetAttr((PyObject *)Py_TYPE(be), s_binary);
    PyObject *mu = PyObject_GetAttr((PyObject *)Py_TYPE(be), s_unary);
    PyObject *mr = PyObject_GetAttr((PyObject *)Py_TYPE(be), s_reshape);
    PyObject *mp = PyObject_GetAttr((PyObject *)Py_TYPE(be), s_permute);
    if (!d || !dt || !db || !mb || !mu || !mr || !mp)
        goto fail;
    off_data = member_offset(d);
    off_dtype = member_offset(dt);
    off_backend = member_offset(db);
    if (off_data < 0 || off_dtype < 0 || off_backend < 0)
        goto fail;
    /* identities as _PyType_Lookup sees them (borrowed there; we hold our own references) */
    if (_PyType_Lookup((PyTypeObject *)tt, s_data) != d || _PyType_Lookup((PyTypeObject *)tt, s_backend) != db ||
        _PyType_Lookup(Py_TYPE(be), s_binary) != mb || _PyType_Lookup(Py_TYPE(be), s_unary) != mu ||
        _PyType_Lookup(Py_TYPE(be), s_reshape) != mr || _PyType_Lookup(Py_TYPE(be), s_permute) != mp) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch.setup: Tensor or the backend is patched");
        goto fail;
    }
    slot_data = d;
    slot_dtype = dt;
    slot_backend = db;
    meth_binary = mb;
    meth_unary = mu;
    meth_reshape = mr;
    meth_permute = mp;
    Py_INCREF(tt);
    tensor_type = (PyTypeObject *)tt;
    Py_INCREF(nt);
    ndarray_type = (PyTypeObject *)nt;
    Py_INCREF(be);
    np_backend = be;
    Py_INCREF(asa);
    asarray = asa;
    fast_min = fm;
    tensor_tag = 0;
    ready = 1;
    Py_RETURN_NONE;
fail:
    Py_XDECREF(d);
    Py_XDECREF(dt);
    Py_XDECREF(db);
    Py_XDECREF(mb);
    Py_XDECREF(mu);
    Py_XDECREF(mr);
    Py_XDECREF(mp);
    return NULL;
}

/* add_op(name, ufunc, fallback, result_dtype_or_None, reflected, kind, same, floats, ints) -> descriptor;
 * kind: 0 binary operator, 1 unary operator, 2 __getitem__ (ufunc and dtypes unused) */
static PyObject *add_op(PyObject *mod, PyObject *args)
{
    const char *name;
    PyObject *uf, *fb, *res, *same, *flt, *ints;
    int refl, un;
    (void)mod;
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch.add_op: call setup first");
        return NULL;
    }
    if (!PyArg_ParseTuple(args, "sOOOpiOOO", &name, &uf, &fb, &res, &refl, &un, &same, &flt, &ints))
        return NULL;
    if (nops >= NOPS) {
        PyErr_SetString(PyExc_ValueError, "_dispatch.add_op: no room for another operator");
        return NULL;
    }
    OpSpec *s = &OPS[nops];
    memset(s, 0, sizeof(*s));
    if (fill(s->same, &s->nsame, same) < 0 || fill(s->flt, &s->nfloat, flt) < 0 || fill(s->integer, &s->nint, ints) < 0)
        return NULL;
    Py_INCREF(uf);
    s->ufunc = uf;
    Py_INCREF(fb);
    s->fallback = fb;
    if (res != Py_None) {
        Py_INCREF(res);
        s->result = res;
    }
    s->reflected = refl;
    s->unary = un == 1;
    s->getitem = un == 2;
    PyMethodDef *m = &OPDEFS[nops];
    char *nm = PyMem_Malloc(strlen(name) + 1);  /* kept for the descriptor's lifetime (the process) */
    if (nm == NULL)
        return PyErr_NoMemory();
    strcpy(nm, name);
    m->ml_name = nm;
    m->ml_meth = (PyCFunction)(void (*)(void))OPFNS[nops];
    m->ml_flags = METH_FASTCALL | METH_KEYWORDS;
    m->ml_doc = NULL;
    PyObject *descr = PyDescr_NewMethod(tensor_type, m);
    if (descr == NULL)
        return NULL;
    nops++;
    return descr;
}


/* ------------------------------------------------------------------------------------------------
 * Tensor construction and views
 * ---------------------------------------------------------------------------------------------- */

/* wrap(data, dtype, backend): runetensor._tensor.wrap in C (a Tensor around a handle, no checks). */
static PyObject *cwrap(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    if (!ready) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch.wrap: call setup first");
        return NULL;
    }
    if (nargs != 3) {
        PyErr_Format(PyExc_TypeError, "wrap() takes 3 positional arguments but %zd were given", nargs);
        return NULL;
    }
    PyObject *t = tensor_type->tp_alloc(tensor_type, 0);
    if (t == NULL)
        return NULL;
    Py_INCREF(args[0]);
    SLOT(t, off_data) = args[0];
    Py_INCREF(args[1]);
    SLOT(t, off_dtype) = args[1];
    Py_INCREF(args[2]);
    SLOT(t, off_backend) = args[2];
    return t;
}

/* The handle of t when t is a Tensor of the NumPy backend holding an ndarray and nothing is patched. */
static PyObject *plain_handle(PyObject *t)
{
    if (!ready || Py_TYPE(t) != tensor_type || SLOT(t, off_backend) != np_backend || SLOT(t, off_dtype) == NULL)
        return NULL;
    PyObject *h = SLOT(t, off_data);
    if (h == NULL || Py_TYPE(h) != ndarray_type || !env_ok())
        return NULL;
    return h;
}

/* reshape_view(t, shape, max_rank): rt.reshape's fast case in C (shape a tuple or list of at most
 * max_rank exact ints >= 0 and at most one -1, t non-empty, the sizes equal, NumPy's reshape a view);
 * None for anything else (rt.reshape's Python path decides, errors included). */
static PyObject *reshape_view(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    if (nargs != 3)
        Py_RETURN_NONE;
    PyObject *h = plain_handle(args[0]), *shape = args[1];
    if (h == NULL || !(PyTuple_CheckExact(shape) || PyList_CheckExact(shape)))
        Py_RETURN_NONE;
    Py_ssize_t maxr = PyLong_AsSsize_t(args[2]);
    if (maxr == -1 && PyErr_Occurred())
        return NULL;
    ArrayHead *a = (ArrayHead *)h;
    Py_ssize_t size = 1;
    for (int i = 0; i < a->nd; i++)
        size *= a->dimensions[i];
    Py_ssize_t k = PySequence_Fast_GET_SIZE(shape);
    if (size == 0 || k > maxr || k > 64)
        Py_RETURN_NONE;
    PyObject **items = PySequence_Fast_ITEMS(shape);
    Py_ssize_t dims[64], n = 1;
    int neg = -1;
    for (Py_ssize_t i = 0; i < k; i++) {
        if (!PyLong_CheckExact(items[i]))
            Py_RETURN_NONE;
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(items[i], &overflow);
        if (overflow || (v == -1 && PyErr_Occurred())) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        if (v < 0) {
            if (v != -1 || neg >= 0)
                Py_RETURN_NONE;
            neg = (int)i;
            continue;
        }
        if (v > size)
            Py_RETURN_NONE;  /* the product cannot be the size (size > 0) */
        dims[i] = (Py_ssize_t)v;
        n *= dims[i];
        if (n > size)
            Py_RETURN_NONE;
    }
    if (neg >= 0) {
        if (n == 0 || size % n)
            Py_RETURN_NONE;
        dims[neg] = size / n;
        n = size;
    }
    if (n != size)
        Py_RETURN_NONE;
    PyObject *st = PyTuple_New(k);
    if (st == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *v = PyLong_FromSsize_t(dims[i]);
        if (v == NULL) {
            Py_DECREF(st);
            return NULL;
        }
        PyTuple_SET_ITEM(st, i, v);
    }
    /* h.reshape(shape, copy=False), as NumpyBackend.reshape; a C-contiguous h always gives a view, and
     * NumPy's keyword handling costs more than the reshape: then without it */
    PyObject *argv[3] = {h, st, Py_False};
    PyObject *r = PyObject_VectorcallMethod(s_reshape, argv, 2, (a->flags & ARRAY_C_CONTIGUOUS) ? NULL : kw_copy);
    Py_DECREF(st);
    if (r == NULL) {
        PyErr_Clear();  /* no view (ValueError): the Python path says so */
        Py_RETURN_NONE;
    }
    if (Py_TYPE(r) != ndarray_type) {
        Py_DECREF(r);
        Py_RETURN_NONE;
    }
    PyObject *t = tensor_type->tp_alloc(tensor_type, 0);
    if (t == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    SLOT(t, off_data) = r;
    Py_INCREF(SLOT(args[0], off_dtype));
    SLOT(t, off_dtype) = SLOT(args[0], off_dtype);
    Py_INCREF(np_backend);
    SLOT(t, off_backend) = np_backend;
    return t;
}

/* transpose_view(t): rt.transpose(t) (all axes reversed) in C for a NumPy tensor; None otherwise. */
static PyObject *transpose_view(PyObject *mod, PyObject *t0)
{
    (void)mod;
    PyObject *h = plain_handle(t0);
    if (h == NULL)
        Py_RETURN_NONE;
    PyObject *r = PyObject_CallMethodNoArgs(h, s_transpose);  /* NumPy: the axes reversed */
    if (r == NULL)
        return NULL;
    if (Py_TYPE(r) != ndarray_type) {
        Py_DECREF(r);
        Py_RETURN_NONE;
    }
    PyObject *t = tensor_type->tp_alloc(tensor_type, 0);
    if (t == NULL) {
        Py_DECREF(r);
        return NULL;
    }
    SLOT(t, off_data) = r;
    Py_INCREF(SLOT(t0, off_dtype));
    SLOT(t, off_dtype) = SLOT(t0, off_dtype);
    Py_INCREF(np_backend);
    SLOT(t, off_backend) = np_backend;
    return t;
}

/* ------------------------------------------------------------------------------------------------
 * NumpyBackend.binary's small plain case (runetensor/_backend/numpy_backend.py)
 * ---------------------------------------------------------------------------------------------- */
static PyObject *bk_ops = NULL;  /* op name -> (ufunc, float operands only) */
static PyObject *bk_plain[MAXDT], *bk_float[MAXDT];
static int nbk_plain = 0, nbk_float = 0;

/* set_backend_ops(ops, plain_dtypes, float_dtypes): what backend_binary may run. */
static PyObject *set_backend_ops(PyObject *mod, PyObject *args)
{
    PyObject *ops, *plain, *flt;
    (void)mod;
    if (!PyArg_ParseTuple(args, "O!OO", &PyDict_Type, &ops, &plain, &flt))
        return NULL;
    if (bk_ops != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "_dispatch.set_backend_ops: already set");
        return NULL;
    }
    if (fill(bk_plain, &nbk_plain, plain) < 0 || fill(bk_float, &nbk_float, flt) < 0)
        return NULL;
    Py_INCREF(ops);
    bk_ops = ops;
    Py_RETURN_NONE;
}

/* backend_binary(op, x, y): NumpyBackend.binary(op, x, y) when the ufunc is all it does: op one of
 * set_backend_ops's, the operands ndarrays of one plain dtype (fewer than fast_min elements) or exact
 * Python floats/ints beside one; the result as that method returns it (a 0-d array, not a NumPy
 * scalar).  NotImplemented otherwise, and when the ufunc raises (the method then raises it). */
static PyObject *backend_binary(PyObject *mod, PyObject *const *a, Py_ssize_t n)
{
    (void)mod;
    if (n != 3 || bk_ops == NULL || !ready || !PyUnicode_CheckExact(a[0]))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *spec = PyDict_GetItemWithError(bk_ops, a[0]);
    if (spec == NULL) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    PyObject *descr = NULL;
    for (int i = 1; i < 3; i++) {
        PyObject *v = a[i];
        if (Py_TYPE(v) == ndarray_type) {
            PyObject *d = ((ArrayHead *)v)->descr;
            if ((descr != NULL && d != descr) || !small_array(v) || !allowed(bk_plain, nbk_plain, d))
                Py_RETURN_NOTIMPLEMENTED;
            descr = d;
        } else if (!PyFloat_CheckExact(v) && !PyLong_CheckExact(v)) {
            Py_RETURN_NOTIMPLEMENTED;
        }
    }
    if (descr == NULL || (PyTuple_GET_ITEM(spec, 1) == Py_True && !allowed(bk_float, nbk_float, descr)))
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *r = call_quiet(PyTuple_GET_ITEM(spec, 0), a + 1, 2);
    if (r == NULL) {
        PyErr_Clear();
        Py_RETURN_NOTIMPLEMENTED;
    }
    if (Py_TYPE(r) != ndarray_type) {
        PyObject *arr = PyObject_CallOneArg(asarray, r);
        Py_DECREF(r);
        return arr;
    }
    return r;
}

/* ------------------------------------------------------------------------------------------------
 * rt.jit's cached calls (runetensor/_jit/__init__.py, runetensor/_backend/_jitrun.py)
 * ---------------------------------------------------------------------------------------------- */

/* fast_key(args): the jit fast path's key ((backend, shape, dtype) per argument) when every argument
 * is a Tensor of the NumPy backend whose handle is a C-contiguous ndarray; NotImplemented otherwise
 * (the Python method decides: other backends, layouts, types). */
static PyObject *fast_key(PyObject *mod, PyObject *args)
{
    (void)mod;
    if (!ready || !PyTuple_CheckExact(args) || PyTuple_GET_SIZE(args) == 0)
        Py_RETURN_NOTIMPLEMENTED;
    Py_ssize_t n = PyTuple_GET_SIZE(args);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i);
        if (Py_TYPE(x) != tensor_type || SLOT(x, off_backend) != np_backend || SLOT(x, off_dtype) == NULL)
            Py_RETURN_NOTIMPLEMENTED;
        PyObject *h = SLOT(x, off_data);
        if (h == NULL || Py_TYPE(h) != ndarray_type || !(((ArrayHead *)h)->flags & ARRAY_C_CONTIGUOUS))
            Py_RETURN_NOTIMPLEMENTED;
    }
    if (!env_ok())
        Py_RETURN_NOTIMPLEMENTED;
    PyObject *key = PyTuple_New(n);
    if (key == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *x = PyTuple_GET_ITEM(args, i);
        ArrayHead *h = (ArrayHead *)SLOT(x, off_data);
        PyObject *shape = PyTuple_New(h->nd);
        if (shape == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        for (int j = 0; j < h->nd; j++) {
            PyObject *v = PyLong_FromSsize_t(h->dimensions[j]);
            if (v == NULL) {
                Py_DECREF(shape);
                Py_DECREF(key);
                return NULL;
            }
            PyTuple_SET_ITEM(shape, j, v);
        }
        PyObject *e = PyTuple_Pack(3, np_backend, shape, SLOT(x, off_dtype));
        Py_DECREF(shape);
        if (e == NULL) {
            Py_DECREF(key);
            return NULL;
        }
        PyTuple_SET_ITEM(key, i, e);
    }
    return key;
}

/* fast_lookup(args, programs): (programs[fast_key(args)], [each argument's handle]) on a hit, None on a
 * miss, NotImplemented where fast_key is. */
static PyObject *fast_lookup(PyObject *mod, PyObject *const *argv, Py_ssize_t nargs)
{
    if (nargs != 2 || !PyDict_CheckExact(argv[1])) {
        PyErr_SetString(PyExc_TypeError, "_dispatch.fast_lookup: expected the arguments and a dict");
        return NULL;
    }
    PyObject *key = fast_key(mod, argv[0]);
    if (key == NULL || key == Py_NotImplemented)
        return key;
    PyObject *prog = PyDict_GetItemWithError(argv[1], key);
    Py_DECREF(key);
    if (prog == NULL) {
        if (PyErr_Occurred())
            return NULL;
        Py_RETURN_NONE;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(argv[0]);
    PyObject *hs = PyList_New(n);
    if (hs == NULL)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *h = SLOT(PyTuple_GET_ITEM(argv[0], i), off_data);
        Py_INCREF(h);
        PyList_SET_ITEM(hs, i, h);
    }
    PyObject *r = PyTuple_Pack(2, prog, hs);
    Py_DECREF(hs);
    return r;
}

/* take(held, specs): the result buffers of a program step (runetensor/_backend/_jitrun.py's
 * Outputs.take): for output j, a buffer of held[j] that nothing else refers to, or
 * specs[j][2](shape, dtype), kept in held[j] when it holds fewer than specs[j][3].  Runs with the GIL
 * held from the reference-count check to the hand-out, so two threads never get one buffer. */
static PyObject *take_impl(PyObject *held, PyObject *specs)
{
    if (!PyList_CheckExact(held) || !PyTuple_CheckExact(specs) || PyList_GET_SIZE(held) != PyTuple_GET_SIZE(specs)) {
        PyErr_SetString(PyExc_TypeError, "_dispatch.take: expected a list of rings and a tuple of as many specs");
        return NULL;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(specs);
    PyObject *res = PyList_New(n);
    if (res == NULL)
        return NULL;
    for (Py_ssize_t j = 0; j < n; j++) {
        PyObject *ring = PyList_GET_ITEM(held, j), *spec = PyTuple_GET_ITEM(specs, j), *h = NULL;
        if (!PyList_CheckExact(ring) || !PyTuple_CheckExact(spec) || PyTuple_GET_SIZE(spec) != 4) {
            Py_DECREF(res);
            PyErr_SetString(PyExc_TypeError, "_dispatch.take: a ring is not a list or a spec not (shape, dtype, "
                                             "empty, keep)");
            return NULL;
        }
        for (Py_ssize_t i = 0; i < PyList_GET_SIZE(ring); i++) {
            PyObject *b = PyList_GET_ITEM(ring, i);
            if (Py_REFCNT(b) == 1) {  /* only the ring refers to it */
                Py_INCREF(b);
                h = b;
                break;
            }
        }
        if (h == NULL) {
            h = PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(spec, 2), PyTuple_GET_ITEM(spec, 0),
                                             PyTuple_GET_ITEM(spec, 1), NULL);
            if (h == NULL) {
                Py_DECREF(res);
                return NULL;
            }
            Py_ssize_t keep = PyLong_AsSsize_t(PyTuple_GET_ITEM(spec, 3));
            if (keep == -1 && PyErr_Occurred()) {
                Py_DECREF(h);
                Py_DECREF(res);
                return NULL;
            }
            if (PyList_GET_SIZE(ring) < keep && PyList_Append(ring, h) < 0) {
                Py_DECREF(h);
                Py_DECREF(res);
                return NULL;
            }
        }
        PyList_SET_ITEM(res, j, h);
    }
    return res;
}

static PyObject *take(PyObject *mod, PyObject *args)
{
    PyObject *held, *specs;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OO", &held, &specs))
        return NULL;
    return take_impl(held, specs);
}

typedef void (*kernel_fn)(const int64_t *);
#define PLAN_MAX_ARGS 512
#define PLAN_MAX_OPS 32
#define PLAN_MAX_ND 16

typedef struct {
    PyObject *kernel;                 /* keeps the kernel's library loaded */
    kernel_fn fn;
    Py_ssize_t nvec;
    int64_t vec[PLAN_MAX_ARGS];
    int nin, nops;                    /* operands: nin inputs, then the outputs */
    Py_ssize_t pos[PLAN_MAX_OPS];
    int64_t offs[PLAN_MAX_OPS];
    int nd[PLAN_MAX_OPS];
    Py_ssize_t dims[PLAN_MAX_OPS][PLAN_MAX_ND], strides[PLAN_MAX_OPS][PLAN_MAX_ND];
    PyObject *descr[PLAN_MAX_OPS];
    PyObject *held, *specs;           /* the step's Outputs */
} Plan;

static void plan_free(PyObject *cap)
{
    Plan *p = PyCapsule_GetPointer(cap, "runetensor.jit_plan");
    if (p == NULL)
        return;
    Py_XDECREF(p->kernel);
    for (int i = 0; i < p->nin; i++)
        Py_XDECREF(p->descr[i]);
    Py_XDECREF(p->held);
    Py_XDECREF(p->specs);
    PyMem_Free(p);
}

static int as_ssize_tuple(PyObject *t, Py_ssize_t *out, int n)
{
    if (!PyTuple_Check(t) || PyTuple_GET_SIZE(t) != n)
        return -1;
    for (int i = 0; i < n; i++) {
        out[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(t, i));
        if (out[i] == -1 && PyErr_Occurred())
            return -1;
    }
    return 0;
}

/* make_plan(kernel, addr, vector, positions, offsets, layouts, held, specs): a plan for run_plan, or
 * None when the call does not fit one (too many operands or dimensions). */
static PyObject *make_plan(PyObject *mod, PyObject *args)
{
    PyObject *kern, *pos, *offs, *lays, *held, *specs;
    unsigned long long addr;
    Py_buffer vb;
    (void)mod;
    if (!PyArg_ParseTuple(args, "OKy*O!OO!O!O!", &kern, &addr, &vb, &PyTuple_Type, &pos, &offs, &PyTuple_Type, &lays,
                          &PyList_Type, &held, &PyTuple_Type, &specs))
        return NULL;
    Py_ssize_t nvec = vb.len / 8, nops = PyTuple_GET_SIZE(pos), nin = PyTuple_GET_SIZE(lays);
    if (!ready || addr == 0 || vb.len % 8 || nvec > PLAN_MAX_ARGS || nops > PLAN_MAX_OPS || nin > nops ||
        nops - nin != PyTuple_GET_SIZE(specs) || PyList_GET_SIZE(held) != PyTuple_GET_SIZE(specs) ||
        (offs != Py_None && (!PyTuple_Check(offs) || PyTuple_GET_SIZE(offs) != nops))) {
        PyBuffer_Release(&vb);
        Py_RETURN_NONE;
    }
    Plan *p = PyMem_Calloc(1, sizeof(Plan));
    if (p == NULL) {
        PyBuffer_Release(&vb);
        return PyErr_NoMemory();
    }
    memcpy(p->vec, vb.buf, (size_t)vb.len);
    PyBuffer_Release(&vb);
    p->nvec = nvec;
    p->fn = (kernel_fn)(uintptr_t)addr;
    p->nops = (int)nops;
    for (Py_ssize_t i = 0; i < nops; i++) {
        p->pos[i] = PyLong_AsSsize_t(PyTuple_GET_ITEM(pos, i));
        p->offs[i] = offs == Py_None ? 0 : PyLong_AsLongLong(PyTuple_GET_ITEM(offs, i));
        if (PyErr_Occurred() || p->pos[i] < 0 || p->pos[i] >= nvec)
            goto unfit;
    }
    for (Py_ssize_t i = 0; i < nin; i++) {
        PyObject *l = PyTuple_GET_ITEM(lays, i);  /* (shape, strides, dtype) */
        if (!PyTuple_Check(l) || PyTuple_GET_SIZE(l) != 3 || !PyTuple_Check(PyTuple_GET_ITEM(l, 0)))
            goto unfit;
        Py_ssize_t nd = PyTuple_GET_SIZE(PyTuple_GET_ITEM(l, 0));
        if (nd > PLAN_MAX_ND || as_ssize_tuple(PyTuple_GET_ITEM(l, 0), p->dims[i], (int)nd) < 0 ||
            as_ssize_tuple(PyTuple_GET_ITEM(l, 1), p->strides[i], (int)nd) < 0)
            goto unfit;
        p->nd[i] = (int)nd;
        p->descr[i] = PyTuple_GET_ITEM(l, 2);
        Py_INCREF(p->descr[i]);
        p->nin = (int)i + 1;
    }
    p->nin = (int)nin;
    Py_INCREF(kern);
    p->kernel = kern;
    Py_INCREF(held);
    p->held = held;
    Py_INCREF(specs);
    p->specs = specs;
    PyObject *cap = PyCapsule_New(p, "runetensor.jit_plan", plan_free);
    if (cap == NULL) {
        p->kernel = NULL;
        Py_DECREF(kern);
        Py_DECREF(held);
        Py_DECREF(specs);
        for (int i = 0; i < p->nin; i++)
            Py_DECREF(p->descr[i]);
        PyMem_Free(p);
    }
    return cap;
unfit:
    PyErr_Clear();
    for (int i = 0; i < p->nin; i++)
        Py_DECREF(p->descr[i]);
    PyMem_Free(p);
    Py_RETURN_NONE;
}

/* run_plan(plan, xs): the step's results (a tuple of its output buffers) when every operand of xs is
 * an ndarray of the plan's layout (shape, strides, dtype object); None otherwise (the Python runner). */
static PyObject *run_plan(PyObject *mod, PyObject *const *args, Py_ssize_t nargs)
{
    (void)mod;
    if (nargs != 2 || !PyTuple_CheckExact(args[1])) {
        PyErr_SetString(PyExc_TypeError, "_dispatch.run_plan: expected a plan and a tuple of operands");
        return NULL;
    }
    Plan *p = PyCapsule_GetPointer(args[0], "runetensor.jit_plan");
    if (p == NULL)
        return NULL;
    PyObject *xs = args[1];
    if (PyTuple_GET_SIZE(xs) != p->nin)
        Py_RETURN_NONE;
    for (int i = 0; i < p->nin; i++) {
        PyObject *x = PyTuple_GET_ITEM(xs, i);
        if (Py_TYPE(x) != ndarray_type)
            Py_RETURN_NONE;
        ArrayHead *h = (ArrayHead *)x;
        if (h->nd != p->nd[i] || h->descr != p->descr[i])
            Py_RETURN_NONE;
        for (int j = 0; j < h->nd; j++)
            if (h->dimensions[j] != p->dims[i][j] || h->strides[j] != p->strides[i][j])
                Py_RETURN_NONE;
    }
    PyObject *outs = take_impl(p->held, p->specs);
    if (outs == NULL)
        return NULL;
    int64_t A[PLAN_MAX_ARGS];
    memcpy(A, p->vec, (size_t)p->nvec * 8);
    for (int i = 0; i < p->nops; i++) {
        PyObject *a = i < p->nin ? PyTuple_GET_ITEM(xs, i) : PyList_GET_ITEM(outs, i - p->nin);
        if (Py_TYPE(a) != ndarray_type) {  /* an output buffer made elsewhere: not ours to write */
            Py_DECREF(outs);
            Py_RETURN_NONE;
        }
        A[p->pos[i]] = (int64_t)(intptr_t)((ArrayHead *)a)->data + p->offs[i];
    }
    /* xs and outs keep every operand alive during the call; the plan keeps the kernel loaded */
    Py_BEGIN_ALLOW_THREADS
    p->fn(A);
    Py_END_ALLOW_THREADS
    PyObject *r = PyList_AsTuple(outs);
    Py_DECREF(outs);
    return r;
}

static PyMethodDef methods[] = {
    {"set_quiet", set_quiet, METH_VARARGS,
     "set_quiet(var, value): NumPy's error-state context variable and its errstate(all='ignore') value, set "
     "around every ufunc call (required before setup)"},
    {"setup", setup, METH_VARARGS,
     "setup(Tensor, ndarray, probe, backend, asarray, fast_min): check the array layout on the probe and "
     "remember the objects the fast path compares with"},
    {"add_op", add_op, METH_VARARGS,
     "add_op(name, ufunc, fallback, result_dtype, reflected, kind, same, floats, ints): a method descriptor of "
     "Tensor running ufunc in C in the common cases and fallback(self, *args) otherwise"},
    {"wrap", (PyCFunction)(void (*)(void))cwrap, METH_FASTCALL,
     "wrap(data, dtype, backend): a Tensor around a backend handle (runetensor._tensor.wrap)"},
    {"reshape_view", (PyCFunction)(void (*)(void))reshape_view, METH_FASTCALL,
     "reshape_view(t, shape, max_rank): rt.reshape's view for a NumPy tensor and a plain shape, else None"},
    {"transpose_view", transpose_view, METH_O, "transpose_view(t): rt.transpose(t) for a NumPy tensor, else None"},
    {"set_backend_ops", set_backend_ops, METH_VARARGS,
     "set_backend_ops(ops, plain_dtypes, float_dtypes): the ufuncs backend_binary runs, per op name"},
    {"backend_binary", (PyCFunction)(void (*)(void))backend_binary, METH_FASTCALL,
     "backend_binary(op, x, y): NumpyBackend.binary's result for small plain operands, else NotImplemented"},
    {"fast_key", fast_key, METH_O,
     "fast_key(args): rt.jit's fast-path key when every argument is a C-contiguous NumPy Tensor, else "
     "NotImplemented"},
    {"fast_lookup", (PyCFunction)(void (*)(void))fast_lookup, METH_FASTCALL,
     "fast_lookup(args, programs): (program, handles) for fast_key(args) in programs, None if absent, "
     "NotImplemented where fast_key is"},
    {"take", take, METH_VARARGS, "take(held, specs): a jit step's result buffers (see _jitrun.Outputs)"},
    {"make_plan", make_plan, METH_VARARGS,
     "make_plan(kernel, addr, vector, positions, offsets, layouts, held, specs): a kernel call plan, or None"},
    {"run_plan", (PyCFunction)(void (*)(void))run_plan, METH_FASTCALL,
     "run_plan(plan, xs): the step's output buffers after the kernel ran on xs, or None if xs do not fit"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_dispatch", "C fast path of Tensor's operators on small NumPy tensors.", -1, methods
};

PyMODINIT_FUNC PyInit__dispatch(void)
{
    s_data = PyUnicode_InternFromString("_data");
    s_dtype = PyUnicode_InternFromString("_dtype");
    s_backend = PyUnicode_InternFromString("_backend");
    s_binary = PyUnicode_InternFromString("binary");
    s_unary = PyUnicode_InternFromString("unary");
    s_dtype_attr = PyUnicode_InternFromString("dtype");
    s_base_attr = PyUnicode_InternFromString("base");
    s_reshape = PyUnicode_InternFromString("reshape");
    s_permute = PyUnicode_InternFromString("permute");
    s_transpose = PyUnicode_InternFromString("transpose");
    s_copy = PyUnicode_InternFromString("copy");
    kw_copy = s_copy ? PyTuple_Pack(1, s_copy) : NULL;
    if (!s_reshape || !s_permute || !s_transpose || !kw_copy)
        return NULL;
    if (!s_data || !s_dtype || !s_backend || !s_binary || !s_unary || !s_dtype_attr || !s_base_attr)
        return NULL;
    return PyModule_Create(&moddef);
}
