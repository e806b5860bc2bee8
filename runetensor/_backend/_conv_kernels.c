/* Optional compiled convolution kernels of runetensor's NumPy backend (float32, stride 1).

   A stride-1 convolution is computed on "flat rows": every input channel is one row of the
   zero-padded input (samples one after the other, each sample's padded spatial block flattened),
   and tap t of output position q reads that row at q + offs[t].  So

       conv_fwd:   y[co, q]    = sum over ci, t of w[co, ci*T + t] * x[ci, q + offs[t]]
       conv_wgrad: gw[co, ci*T + t] = sum over q of g[co, q] * x[ci, q + offs[t]]

   The input's gradient is conv_fwd again (the transposed convolution as a convolution: the
   cotangent placed in a zero frame, the weight read as (C_in, C_out*T), the offsets mirrored),
   so two kernels do forward and backward.  Positions of the padding columns are computed and
   dropped by the caller.

   Blocking: conv_fwd keeps a 4-row x (NV vectors) block of outputs in registers and walks the
   C_in*T taps once per block (the input strip and the weights stay in L1); conv_wgrad keeps
   4 x 4 outputs as vectors of partial sums over strips of 512 positions, adds each strip's lane
   sums into the result in order.  Every output's summation order depends only on the shapes
   and the [q_lo, q_hi) range the caller passes (callers cut ranges from the shapes only), never
   on the thread count.  AVX-512F, AVX2+FMA and baseline clones are chosen once at import.
   The GIL is released around the loops. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if defined(__GNUC__) && defined(__x86_64__) && defined(__ELF__) && \
    ((defined(__clang__) && __clang_major__ >= 14) || (!defined(__clang__) && __GNUC__ >= 8))
#define HAVE_X86_CLONES 1
#endif

#if defined(__GNUC__)
typedef float v4f __attribute__((vector_size(16)));
#define UNROLL _Pragma("GCC unroll 16")
#else
#error "_conv_kernels.c needs GCC or clang (vector extensions)"
#endif

/* conv_fwd for one vector type VT of W floats, NV vectors per row block */
#define DEFINE_FWD(NAME, ATTR, VT, W, NV)                                                          \
ATTR static void NAME(const float *w, const float *x, const int64_t *offs, float *y,             \
                      Py_ssize_t cout, Py_ssize_t cin, Py_ssize_t T, Py_ssize_t lx,               \
                      Py_ssize_t ly, Py_ssize_t q_lo, Py_ssize_t q_hi)                            \
{                                                                                                 \
    const Py_ssize_t K = cin * T;                                                                 \
    Py_ssize_t q0 = q_lo;                                                                         \
    for (; q0 + (W) * (NV) <= q_hi; q0 += (W) * (NV)) {                                           \
        for (Py_ssize_t co = 0; co < cout; co += 4) {                                             \
            VT acc[4][NV];                                                                        \
            UNROLL for (int r = 0; r < 4; r++)                                                    \
                UNROLL for (int j = 0; j < (NV); j++) acc[r][j] = (VT){0};                        \
            const float *w0 = w + co * K;                                                         \
            for (Py_ssize_t ci = 0; ci < cin; ci++) {                                             \
                const float *xr = x + ci * lx + q0;                                               \
                const float *wr = w0 + ci * T;                                                    \
                for (Py_ssize_t t = 0; t < T; t++) {                                              \
                    const float *xp = xr + offs[t];                                               \
                    VT xv[NV];                                                                    \
                    UNROLL for (int j = 0; j < (NV); j++) memcpy(&xv[j], xp + j * (W), sizeof(VT)); \
                    const float a0 = wr[t], a1 = wr[K + t], a2 = wr[2 * K + t], a3 = wr[3 * K + t]; \
                    UNROLL for (int j = 0; j < (NV); j++) {                                       \
                        acc[0][j] += xv[j] * a0;                                                  \
                        acc[1][j] += xv[j] * a1;                                                  \
                        acc[2][j] += xv[j] * a2;                                                  \
                        acc[3][j] += xv[j] * a3;                                                  \
                    }                                                                             \
                }                                                                                 \
            }                                                                                     \
            UNROLL for (int r = 0; r < 4; r++)                                                    \
                UNROLL for (int j = 0; j < (NV); j++)                                             \
                    memcpy(y + (co + r) * ly + q0 + j * (W), &acc[r][j], sizeof(VT));             \
        }                                                                                         \
    }                                                                                             \
    for (Py_ssize_t q = q0; q < q_hi; q++)                                                        \
        for (Py_ssize_t co = 0; co < cout; co++) {                                                \
            float s = 0.0f;                                                                       \
            const float *wr = w + co * K;                                                         \
            for (Py_ssize_t ci = 0; ci < cin; ci++)                                               \
                for (Py_ssize_t t = 0; t < T; t++)                                                \
                    s += wr[ci * T + t] * x[ci * lx + q + offs[t]];                               \
            y[co * ly + q] = s;                                                                   \
        }                                                                                         \
}

#define WG_STRIP 512

/* conv_wgrad for one vector type VT of W floats.  acc: scratch of cout * K vectors, the running lane
   sums of every output (loaded and stored once per strip and 4 x 4 block; summed across the lanes
   once at the end) */
#define DEFINE_WGRAD(NAME, ATTR, VT, W)                                                            \
ATTR static void NAME(const float *g, const float *x, const int64_t *offs, float *gw,            \
                      Py_ssize_t cout, Py_ssize_t cin, Py_ssize_t T, Py_ssize_t lx,               \
                      Py_ssize_t lg, Py_ssize_t q_lo, Py_ssize_t q_hi, float *accbuf)             \
{                                                                                                 \
    const Py_ssize_t K = cin * T;                                                                 \
    const Py_ssize_t Kp = (K + 3) / 4 * 4;                                                        \
    VT *accv = (VT *)accbuf;                                                                      \
    memset(accbuf, 0, (size_t)(cout * Kp) * sizeof(VT));                                          \
    const Py_ssize_t qv = q_lo + (q_hi - q_lo) / (W) * (W);   /* vector part [q_lo, qv) */       \
    for (Py_ssize_t s0 = q_lo; s0 < qv; s0 += WG_STRIP) {                                         \
        const Py_ssize_t s1 = s0 + WG_STRIP < qv ? s0 + WG_STRIP : qv;                            \
        for (Py_ssize_t co = 0; co < cout; co += 4) {                                             \
            const float *g0 = g + co * lg, *g1 = g0 + lg, *g2 = g1 + lg, *g3 = g2 + lg;           \
            for (Py_ssize_t k0 = 0; k0 < K; k0 += 4) {                                            \
                const Py_ssize_t kn = K - k0 < 4 ? K - k0 : 4;                                    \
                const float *xr[4];                                                               \
                for (int c = 0; c < 4; c++) {                                                     \
                    Py_ssize_t kc = k0 + (c < kn ? c : kn - 1);                                   \
                    xr[c] = x + (kc / T) * lx + offs[kc % T];                                     \
                }                                                                                 \
                VT acc[4][4];                                                                     \
                UNROLL for (int r = 0; r < 4; r++)                                                \
                    UNROLL for (int c = 0; c < 4; c++) acc[r][c] = accv[(co + r) * Kp + k0 + c];  \
                for (Py_ssize_t q = s0; q < s1; q += (W)) {                                       \
                    VT gv[4], xv[4];                                                              \
                    memcpy(&gv[0], g0 + q, sizeof(VT));                                           \
                    memcpy(&gv[1], g1 + q, sizeof(VT));                                           \
                    memcpy(&gv[2], g2 + q, sizeof(VT));                                           \
                    memcpy(&gv[3], g3 + q, sizeof(VT));                                           \
                    UNROLL for (int c = 0; c < 4; c++) memcpy(&xv[c], xr[c] + q, sizeof(VT));     \
                    UNROLL for (int r = 0; r < 4; r++)                                            \
                        UNROLL for (int c = 0; c < 4; c++) acc[r][c] += gv[r] * xv[c];            \
                }                                                                                 \
                UNROLL for (int r = 0; r < 4; r++)                                                \
                    UNROLL for (int c = 0; c < 4; c++) accv[(co + r) * Kp + k0 + c] = acc[r][c];  \
            }                                                                                     \
        }                                                                                         \
    }                                                                                             \
    for (Py_ssize_t co = 0; co < cout; co++)                                                      \
        for (Py_ssize_t k = 0; k < K; k++) {                                                      \
            const VT v = accv[co * Kp + k];                                                       \
            float s = 0.0f;                                                                       \
            for (int l = 0; l < (W); l++) s += v[l];                                              \
            const float *gr = g + co * lg, *xk = x + (k / T) * lx + offs[k % T];                  \
            for (Py_ssize_t q = qv; q < q_hi; q++) s += gr[q] * xk[q];                            \
            gw[co * K + k] = s;                                                                   \
        }                                                                                         \
}

typedef void (*wgrad_fn)(const float *, const float *, const int64_t *, float *, Py_ssize_t, Py_ssize_t,
                         Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, float *);
typedef void (*conv_fn)(const float *, const float *, const int64_t *, float *, Py_ssize_t, Py_ssize_t,
                        Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t, Py_ssize_t);

DEFINE_FWD(fwd_base, , v4f, 4, 2)
DEFINE_WGRAD(wgrad_base, , v4f, 4)
#ifdef HAVE_X86_CLONES
typedef float v8f __attribute__((vector_size(32)));
typedef float v16f __attribute__((vector_size(64)));
DEFINE_FWD(fwd_avx2, __attribute__((target("avx2,fma"))), v8f, 8, 3)
DEFINE_WGRAD(wgrad_avx2, __attribute__((target("avx2,fma"))), v8f, 8)
DEFINE_FWD(fwd_avx512, __attribute__((target("avx512f,fma"))), v16f, 16, 4)
DEFINE_WGRAD(wgrad_avx512, __attribute__((target("avx512f,fma"))), v16f, 16)
#endif

static conv_fn fwd_impl = fwd_base;
static wgrad_fn wgrad_impl = wgrad_base;
static int vec_floats = 4;
static const char *isa_name = "baseline";

/* a float32 / int64 C-contiguous buffer of at least `need` items; ValueError naming the function */
static int get_f(PyObject *o, Py_buffer *v, int writable, Py_ssize_t itemsize, Py_ssize_t need,
                 const char *fn, const char *what)
{
    int flags = PyBUF_C_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(o, v, flags) < 0) {
        PyErr_Clear();
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: %s must be a %sC-contiguous buffer, got %.100s",
                     fn, what, writable ? "writable " : "", Py_TYPE(o)->tp_name);
        return -1;
    }
    if (v->itemsize != itemsize || v->len / itemsize < need) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: %s holds %zd items of %zd bytes; expected at least %zd "
                     "items of %zd bytes", fn, what, v->len / (v->itemsize ? v->itemsize : 1), v->itemsize, need,
                     itemsize);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

/* shared argument checks: rows (multiple of 4), cin >= 1, T >= 1 offsets with
   0 <= offs[t] and q_hi - 1 + offs[t] < lx, 0 <= q_lo <= q_hi <= lrow */
static int check_dims(const char *fn, Py_ssize_t rows, Py_ssize_t cin, const int64_t *offs, Py_ssize_t T,
                      Py_ssize_t lx, Py_ssize_t lrow, Py_ssize_t q_lo, Py_ssize_t q_hi)
{
    if (rows < 0 || rows % 4 || cin < 1 || T < 1) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: rows %zd must be a multiple of 4 and channels %zd, taps %zd "
                     "at least 1", fn, rows, cin, T);
        return -1;
    }
    if (q_lo < 0 || q_hi < q_lo || q_hi > lrow) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: range [%zd, %zd) must lie in [0, %zd]", fn, q_lo, q_hi, lrow);
        return -1;
    }
    for (Py_ssize_t t = 0; t < T; t++)
        if (offs[t] < 0 || (q_hi > q_lo && q_hi - 1 + offs[t] >= lx)) {
            PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: tap offset %lld reads past the input row of %zd "
                         "(range end %zd)", fn, (long long)offs[t], lx, q_hi);
            return -1;
        }
    return 0;
}

static PyObject *conv_call(PyObject *args, int wgrad)
{
    const char *fn = wgrad ? "conv_wgrad" : "conv_fwd";
    PyObject *ao, *xo, *oo, *outo;
    Py_ssize_t rows, cin, lx, lrow, q_lo, q_hi;
    if (!PyArg_ParseTuple(args, "OOOOnnnnnn", &ao, &xo, &oo, &outo, &rows, &cin, &lx, &lrow, &q_lo, &q_hi))
        return NULL;
    Py_buffer av, xv, ov, outv;
    if (get_f(oo, &ov, 0, 8, 1, fn, "offs") < 0) return NULL;
    Py_ssize_t T = ov.len / 8;
    const int64_t *offs = (const int64_t *)ov.buf;
    if (check_dims(fn, rows, cin, offs, T, lx, lrow, q_lo, q_hi) < 0) { PyBuffer_Release(&ov); return NULL; }
    /* fwd: a = w (rows, cin*T), out = y (rows, lrow); wgrad: a = g (rows, lrow), out = gw (rows, cin*T) */
    Py_ssize_t na = wgrad ? rows * lrow : rows * cin * T, nout = wgrad ? rows * cin * T : rows * lrow;
    if (get_f(ao, &av, 0, 4, na, fn, wgrad ? "g" : "w") < 0) { PyBuffer_Release(&ov); return NULL; }
    if (get_f(xo, &xv, 0, 4, cin * lx, fn, "x") < 0) {
        PyBuffer_Release(&ov); PyBuffer_Release(&av); return NULL;
    }
    if (get_f(outo, &outv, 1, 4, nout, fn, "out") < 0) {
        PyBuffer_Release(&ov); PyBuffer_Release(&av); PyBuffer_Release(&xv); return NULL;
    }
    float *scratch = NULL;
    if (wgrad && rows) {
        scratch = (float *)aligned_alloc(64, (size_t)(rows * ((cin * T + 3) / 4 * 4) * vec_floats) * sizeof(float));
        if (scratch == NULL) {
            PyBuffer_Release(&ov); PyBuffer_Release(&av); PyBuffer_Release(&xv); PyBuffer_Release(&outv);
            return PyErr_NoMemory();
        }
    }
    Py_BEGIN_ALLOW_THREADS
    if (rows && wgrad)
        wgrad_impl((const float *)av.buf, (const float *)xv.buf, offs, (float *)outv.buf, rows, cin, T, lx, lrow,
                   q_lo, q_hi, scratch);
    else if (rows)
        fwd_impl((const float *)av.buf, (const float *)xv.buf, offs, (float *)outv.buf, rows, cin, T, lx, lrow,
                 q_lo, q_hi);
    Py_END_ALLOW_THREADS
    free(scratch);
    PyBuffer_Release(&ov); PyBuffer_Release(&av); PyBuffer_Release(&xv); PyBuffer_Release(&outv);
    Py_RETURN_NONE;
}

static PyObject *conv_fwd(PyObject *self, PyObject *args) { (void)self; return conv_call(args, 0); }
static PyObject *conv_wgrad(PyObject *self, PyObject *args) { (void)self; return conv_call(args, 1); }

/* copy_runs(src, soff, dst, doff, length, bias, chan): dst[doff[i] + j] = src[soff[i] + j] (+ bias[chan[i]])
   for every run i and j < length; soff / doff None: runs laid out one after the other (i * length);
   bias and chan None: a plain copy.  Moves the convolutions' operands into and out of the flat-row
   frame (NumPy's strided copies over runs of a few elements cost 3-8x more). */
static PyObject *copy_runs(PyObject *self, PyObject *args)
{
    (void)self;
    const char *fn = "copy_runs";
    PyObject *so, *soo, *do_, *doo, *bo, *co;
    Py_ssize_t len;
    if (!PyArg_ParseTuple(args, "OOOOnOO", &so, &soo, &do_, &doo, &len, &bo, &co)) return NULL;
    if (len < 0) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: length %zd must be >= 0", fn, len);
        return NULL;
    }
    Py_buffer sv, dv, sov = {0}, dov = {0}, bv = {0}, cv = {0};
    int has_so = soo != Py_None, has_do = doo != Py_None, has_b = bo != Py_None;
    if ((bo == Py_None) != (co == Py_None)) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: bias and chan must both be given or both be None", fn);
        return NULL;
    }
    if (!has_so && !has_do) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: give the run offsets of src or dst (or both)", fn);
        return NULL;
    }
    if (get_f(so, &sv, 0, 4, 0, fn, "src") < 0) return NULL;
    if (get_f(do_, &dv, 1, 4, 0, fn, "dst") < 0) { PyBuffer_Release(&sv); return NULL; }
    int ok = 1;
    if (ok && has_so && get_f(soo, &sov, 0, 8, 0, fn, "soff") < 0) { ok = 0; has_so = 0; }
    if (ok && has_do && get_f(doo, &dov, 0, 8, 0, fn, "doff") < 0) { ok = 0; has_do = 0; }
    Py_ssize_t nruns = has_so ? sov.len / 8 : (has_do ? dov.len / 8 : 0);
    if (ok && has_so && has_do && dov.len / 8 != nruns) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: soff has %zd runs and doff %zd", fn, nruns, dov.len / 8);
        ok = 0;
    }
    if (ok && has_b) {
        if (get_f(bo, &bv, 0, 4, 0, fn, "bias") < 0) { ok = 0; has_b = 0; }
        else if (get_f(co, &cv, 0, 8, nruns, fn, "chan") < 0) { ok = 0; PyBuffer_Release(&bv); has_b = 0; }
    }
    const int64_t *sof = has_so ? (const int64_t *)sov.buf : NULL, *dof = has_do ? (const int64_t *)dov.buf : NULL;
    const int64_t *ch = has_b ? (const int64_t *)cv.buf : NULL;
    const Py_ssize_t ns = sv.len / 4, ndst = dv.len / 4, nb = has_b ? bv.len / 4 : 0;
    for (Py_ssize_t i = 0; ok && i < nruns; i++) {
        int64_t a = sof ? sof[i] : (int64_t)(i * len), b = dof ? dof[i] : (int64_t)(i * len);
        if (a < 0 || b < 0 || a + len > ns || b + len > ndst || (ch && (ch[i] < 0 || ch[i] >= nb))) {
            PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: run %zd (src %lld, dst %lld, length %zd) lies outside "
                         "src (%zd) or dst (%zd), or its channel is outside bias", fn, i, (long long)a,
                         (long long)b, len, ns, ndst);
            ok = 0;
        }
    }
    if (ok) {
        const float *src = (const float *)sv.buf, *bias = has_b ? (const float *)bv.buf : NULL;
        float *dst = (float *)dv.buf;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < nruns; i++) {
            const float *s = src + (sof ? sof[i] : (int64_t)(i * len));
            float *d = dst + (dof ? dof[i] : (int64_t)(i * len));
            if (bias) {
                const float bb = bias[ch[i]];
                for (Py_ssize_t j = 0; j < len; j++) d[j] = s[j] + bb;
            } else
                memcpy(d, s, (size_t)len * sizeof(float));
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&sv); PyBuffer_Release(&dv);
    if (has_so) PyBuffer_Release(&sov);
    if (has_do) PyBuffer_Release(&dov);
    if (has_b) { PyBuffer_Release(&bv); PyBuffer_Release(&cv); }
    if (!ok) return NULL;
    Py_RETURN_NONE;
}

static PyObject *set_isa(PyObject *self, PyObject *args)
{
    (void)self;
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name)) return NULL;
    PyObject *prev = PyUnicode_FromString(isa_name);
    if (strcmp(name, "baseline") == 0) {
        fwd_impl = fwd_base; wgrad_impl = wgrad_base; vec_floats = 4; isa_name = "baseline";
    }
#ifdef HAVE_X86_CLONES
    else if (strcmp(name, "avx2") == 0 && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        fwd_impl = fwd_avx2; wgrad_impl = wgrad_avx2; vec_floats = 8; isa_name = "avx2";
    } else if (strcmp(name, "avx512") == 0 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
        fwd_impl = fwd_avx512; wgrad_impl = wgrad_avx512; vec_floats = 16; isa_name = "avx512";
    }
#endif
    else {
        Py_XDECREF(prev);
        PyErr_Format(PyExc_ValueError, "_conv_kernels.set_isa: %s is not available on this machine (expected "
                     "'baseline', or 'avx2' / 'avx512' where the CPU has them)", name);
        return NULL;
    }
    return prev;
}

static PyMethodDef methods[] = {
    {"conv_fwd", conv_fwd, METH_VARARGS,
     "conv_fwd(w, x, offs, y, rows, cin, lx, ly, q_lo, q_hi): y[r, q] = sum_{ci,t} w[r, ci*T+t] x[ci, q+offs[t]] "
     "for q in [q_lo, q_hi) (float32; rows a multiple of 4; offs int64)"},
    {"conv_wgrad", conv_wgrad, METH_VARARGS,
     "conv_wgrad(g, x, offs, gw, rows, cin, lx, lg, q_lo, q_hi): gw[r, ci*T+t] = sum_{q in [q_lo, q_hi)} "
     "g[r, q] x[ci, q+offs[t]] (gw overwritten)"},
    {"copy_runs", copy_runs, METH_VARARGS,
     "copy_runs(src, soff, dst, doff, length, bias, chan): dst[doff[i]+j] = src[soff[i]+j] (+ bias[chan[i]]) "
     "(float32; offsets int64, None: consecutive runs)"},
    {"set_isa", set_isa, METH_VARARGS, "set_isa(name) -> previous: 'baseline', 'avx2' or 'avx512' loops (tests)"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_conv_kernels",
    "Optional compiled stride-1 convolution kernels of runetensor's NumPy backend (float32, GIL released).",
    -1, methods
};

PyMODINIT_FUNC PyInit__conv_kernels(void)
{
#ifdef HAVE_X86_CLONES
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("fma")) {
        fwd_impl = fwd_avx512; wgrad_impl = wgrad_avx512; vec_floats = 16; isa_name = "avx512";
    } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
        fwd_impl = fwd_avx2; wgrad_impl = wgrad_avx2; vec_floats = 8; isa_name = "avx2";
    }
#endif
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL) return NULL;
    if (PyModule_AddStringConstant(m, "ISA", isa_name) < 0) { Py_DECREF(m); return NULL; }
    return m;
}
