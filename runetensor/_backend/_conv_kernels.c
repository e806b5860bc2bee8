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

/* copy_blocks(src, soff, ss, dst, doff, ds, rows, length, bias, chan): for every block i, row r < rows and
   j < length: dst[doff[i] + r * ds + j] = src[soff[i] + r * ss + j] (+ bias[chan[i]]).  soff / doff None:
   blocks laid out one after the other (i * rows * length, rows of length); bias and chan None: a plain
   copy.  Moves the convolutions' operands into and out of the flat-row frame (NumPy's strided copies
   over rows of a few elements cost several times more). */
static PyObject *copy_blocks(PyObject *self, PyObject *args)
{
    (void)self;
    const char *fn = "copy_blocks";
    PyObject *so, *soo, *do_, *doo, *bo, *co;
    Py_ssize_t ss, ds, rows, len;
    if (!PyArg_ParseTuple(args, "OOnOOnnnOO", &so, &soo, &ss, &do_, &doo, &ds, &rows, &len, &bo, &co)) return NULL;
    if (len < 0 || rows < 0 || ss < 0 || ds < 0) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: rows %zd, length %zd and strides %zd, %zd must be >= 0",
                     fn, rows, len, ss, ds);
        return NULL;
    }
    if ((bo == Py_None) != (co == Py_None)) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: bias and chan must both be given or both be None", fn);
        return NULL;
    }
    if (soo == Py_None && doo == Py_None) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: give the block offsets of src or dst (or both)", fn);
        return NULL;
    }
    Py_buffer sv, dv, sov, dov, bv, cv;
    int has_so = 0, has_do = 0, has_b = 0, ok = 1;
    if (get_f(so, &sv, 0, 4, 0, fn, "src") < 0) return NULL;
    if (get_f(do_, &dv, 1, 4, 0, fn, "dst") < 0) { PyBuffer_Release(&sv); return NULL; }
    if (soo != Py_None) { if (get_f(soo, &sov, 0, 8, 0, fn, "soff") < 0) ok = 0; else has_so = 1; }
    if (ok && doo != Py_None) { if (get_f(doo, &dov, 0, 8, 0, fn, "doff") < 0) ok = 0; else has_do = 1; }
    Py_ssize_t nb = has_so ? sov.len / 8 : (has_do ? dov.len / 8 : 0);
    if (ok && has_so && has_do && dov.len / 8 != nb) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: soff has %zd blocks and doff %zd", fn, nb, dov.len / 8);
        ok = 0;
    }
    if (ok && bo != Py_None) {
        if (get_f(bo, &bv, 0, 4, 0, fn, "bias") < 0) ok = 0;
        else if (get_f(co, &cv, 0, 8, nb, fn, "chan") < 0) { ok = 0; PyBuffer_Release(&bv); }
        else has_b = 1;
    }
    const int64_t *sof = has_so ? (const int64_t *)sov.buf : NULL, *dof = has_do ? (const int64_t *)dov.buf : NULL;
    const int64_t *ch = has_b ? (const int64_t *)cv.buf : NULL;
    const Py_ssize_t ns = sv.len / 4, ndst = dv.len / 4, nbias = has_b ? bv.len / 4 : 0;
    const Py_ssize_t span_s = rows ? (rows - 1) * (sof ? ss : len) + len : 0;
    const Py_ssize_t span_d = rows ? (rows - 1) * (dof ? ds : len) + len : 0;
    for (Py_ssize_t i = 0; ok && i < nb; i++) {
        int64_t a = sof ? sof[i] : (int64_t)(i * rows * len), b = dof ? dof[i] : (int64_t)(i * rows * len);
        if (a < 0 || b < 0 || a + span_s > ns || b + span_d > ndst || (ch && (ch[i] < 0 || ch[i] >= nbias))) {
            PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: block %zd (src %lld, dst %lld) lies outside src (%zd) "
                         "or dst (%zd), or its channel is outside bias", fn, i, (long long)a, (long long)b, ns, ndst);
            ok = 0;
        }
    }
    if (ok) {
        const float *src = (const float *)sv.buf, *bias = has_b ? (const float *)bv.buf : NULL;
        float *dst = (float *)dv.buf;
        const Py_ssize_t sst = sof ? ss : len, dst_st = dof ? ds : len;
        Py_BEGIN_ALLOW_THREADS
        for (Py_ssize_t i = 0; i < nb; i++) {
            const float *sp = src + (sof ? sof[i] : (int64_t)(i * rows * len));
            float *dp = dst + (dof ? dof[i] : (int64_t)(i * rows * len));
            const float bb = bias ? bias[ch[i]] : 0.0f;
            for (Py_ssize_t r = 0; r < rows; r++, sp += sst, dp += dst_st) {
                if (bias)
                    for (Py_ssize_t j = 0; j < len; j++) dp[j] = sp[j] + bb;
                else
                    for (Py_ssize_t j = 0; j < len; j++) dp[j] = sp[j];
            }
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

/* the reverse rule of a chain of maxima y = max(...max(max(t[0], t[1]), t[2])..., t[K-1]) over K taps,
   per element: walking the chain back from the last tap, tap i gets ct * 0 where the running maximum
   before it is greater, ct * 0.5 on a tie, ct otherwise, and the running maximum keeps ct, ct * 0.5 or
   ct * 0 (maximum's partials, NaN comparing false: the elementwise rules, in the same operations) */
/* VT: a 16-byte vector of T, VI: the integer vector its comparisons give (all ones where true) */
#define SEL(m, x, y, VI) (((m) & (VI)(x)) | (~(m) & (VI)(y)))
#define DEFINE_POOL_BWD(NAME, T, VT, VI, W)                                                         \
static void NAME(const T *t, const T *ct, T *cts, Py_ssize_t kk, Py_ssize_t m, T *acc)             \
{                                                                                                 \
    const Py_ssize_t mv = m / (W) * (W);                                                          \
    /* acc[i * m + j]: the running maximum over taps 0..i (kept for the backward walk); NaN kept */ \
    memcpy(acc, t, (size_t)m * sizeof(T));                                                        \
    for (Py_ssize_t i = 1; i < kk - 1; i++) {                                                     \
        const T *ap = acc + (i - 1) * m, *vp = t + i * m;                                         \
        T *np_ = acc + i * m;                                                                     \
        Py_ssize_t j = 0;                                                                         \
        for (; j < mv; j += (W)) {                                                                \
            VT a, v;                                                                              \
            memcpy(&a, ap + j, sizeof a); memcpy(&v, vp + j, sizeof v);                           \
            VI keep = (a >= v) | (a != a);                                                        \
            VI r = SEL(keep, a, v, VI);                                                           \
            memcpy(np_ + j, &r, sizeof r);                                                        \
        }                                                                                         \
        for (; j < m; j++) np_[j] = (ap[j] >= vp[j] || ap[j] != ap[j]) ? ap[j] : vp[j];          \
    }                                                                                             \
    T *c = cts;                           /* row 0 carries the running cotangent, tap 0's at the end */ \
    memcpy(c, ct, (size_t)m * sizeof(T));                                                         \
    for (Py_ssize_t i = kk - 1; i > 0; i--) {                                                     \
        const T *ap = acc + (i - 1) * m, *vp = t + i * m;                                         \
        T *op = cts + i * m;                                                                      \
        Py_ssize_t j = 0;                                                                         \
        for (; j < mv; j += (W)) {        /* maximum's partials as selects, no branches */        \
            VT a, v, cj;                                                                          \
            memcpy(&a, ap + j, sizeof a); memcpy(&v, vp + j, sizeof v); memcpy(&cj, c + j, sizeof cj); \
            const VT half = cj * (T)0.5, zero = cj * (T)0.0;                                      \
            const VI gt = a > v, eq = a == v;                                                     \
            const VI o = SEL(gt, zero, SEL(eq, half, cj, VI), VI);                                \
            const VI cn = SEL(gt, cj, SEL(eq, half, zero, VI), VI);                               \
            memcpy(op + j, &o, sizeof o); memcpy(c + j, &cn, sizeof cn);                          \
        }                                                                                         \
        for (; j < m; j++) {                                                                      \
            const T cj = c[j], half = cj * (T)0.5, zero = cj * (T)0.0, a = ap[j], v = vp[j];      \
            op[j] = a > v ? zero : (a == v ? half : cj);                                          \
            c[j] = a > v ? cj : (a == v ? half : zero);                                           \
        }                                                                                         \
    }                                                                                             \
}
typedef double v2d __attribute__((vector_size(16)));
typedef int32_t v4i32 __attribute__((vector_size(16)));
typedef int64_t v2i64 __attribute__((vector_size(16)));
DEFINE_POOL_BWD(pool_bwd_f32, float, v4f, v4i32, 4)
DEFINE_POOL_BWD(pool_bwd_f64, double, v2d, v2i64, 2)

/* max_pool_bwd(t, ct, cts, kk): t and cts (kk, m), ct (m,), float32 or float64 (by item size) */
static PyObject *max_pool_bwd(PyObject *self, PyObject *args)
{
    (void)self;
    const char *fn = "max_pool_bwd";
    PyObject *to, *co, *oo;
    Py_ssize_t kk;
    if (!PyArg_ParseTuple(args, "OOOn", &to, &co, &oo, &kk)) return NULL;
    Py_buffer tv, cv, ov;
    if (PyObject_GetBuffer(to, &tv, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) return NULL;
    Py_ssize_t isz = tv.itemsize;
    if ((isz != 4 && isz != 8) || kk < 1 || tv.len % (kk * isz)) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: t must hold kk=%zd rows of float32 or float64, got %zd "
                     "bytes of %zd-byte items", fn, kk, tv.len, isz);
        PyBuffer_Release(&tv);
        return NULL;
    }
    Py_ssize_t m = tv.len / (kk * isz);
    if (get_f(co, &cv, 0, isz, m, fn, "ct") < 0) { PyBuffer_Release(&tv); return NULL; }
    if (get_f(oo, &ov, 1, isz, kk * m, fn, "cts") < 0) { PyBuffer_Release(&tv); PyBuffer_Release(&cv); return NULL; }
    void *acc = kk > 1 ? malloc((size_t)((kk - 1) * m * isz)) : NULL;
    if (kk > 1 && acc == NULL) {
        PyBuffer_Release(&tv); PyBuffer_Release(&cv); PyBuffer_Release(&ov);
        return PyErr_NoMemory();
    }
    Py_BEGIN_ALLOW_THREADS
    if (kk == 1)
        memcpy(ov.buf, cv.buf, (size_t)(m * isz));
    else if (isz == 4)
        pool_bwd_f32((const float *)tv.buf, (const float *)cv.buf, (float *)ov.buf, kk, m, (float *)acc);
    else
        pool_bwd_f64((const double *)tv.buf, (const double *)cv.buf, (double *)ov.buf, kk, m, (double *)acc);
    Py_END_ALLOW_THREADS
    free(acc);
    PyBuffer_Release(&tv); PyBuffer_Release(&cv); PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* take_taps(src, tapoff, outoff, dst, mode): with K tap offsets and M output offsets (int64) and
   items of 2, 4 or 8 bytes, gather dst[i * M + j] = src[tapoff[i] + outoff[j]] (mode 0), scatter
   dst[tapoff[i] + outoff[j]] = src[i * M + j] (mode 1) or add it there (mode 2, float32 / float64: into
   zeros, 0 + v, the bits of NumPy's add: -0 becomes +0): the windows of a pooling whose windows do not
   overlap, copied out as (K, M) rows, and their cotangents put back (NumPy's strided copies over a few
   elements per row cost several times more) */
#define TAKE_LOOP(U, ADD)                                                                          \
    do {                                                                                          \
        const U *sp = (const U *)src; U *dp = (U *)dst;                                           \
        for (Py_ssize_t i = 0; i < K; i++) {                                                      \
            const int64_t to = tapoff[i];                                                         \
            if (scatter) for (Py_ssize_t j = 0; j < M; j++) dp[to + outoff[j]] ADD sp[i * M + j]; \
            else for (Py_ssize_t j = 0; j < M; j++) dp[i * M + j] = sp[to + outoff[j]];           \
        }                                                                                         \
    } while (0)

static PyObject *take_taps(PyObject *self, PyObject *args)
{
    (void)self;
    const char *fn = "take_taps";
    PyObject *so, *to, *oo, *dobj;
    int scatter;
    if (!PyArg_ParseTuple(args, "OOOOi", &so, &to, &oo, &dobj, &scatter)) return NULL;
    if (scatter < 0 || scatter > 2) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: mode %d must be 0 (gather), 1 (scatter) or 2 (scatter-add "
                     "of float32 / float64)", fn, scatter);
        return NULL;
    }
    Py_buffer sv, tv, ov, dv;
    if (PyObject_GetBuffer(so, &sv, PyBUF_C_CONTIGUOUS) < 0) return NULL;
    Py_ssize_t isz = sv.itemsize;
    if (isz != 2 && isz != 4 && isz != 8) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: src has %zd-byte items; expected 2, 4 or 8", fn, isz);
        PyBuffer_Release(&sv);
        return NULL;
    }
    if (get_f(to, &tv, 0, 8, 0, fn, "tapoff") < 0) { PyBuffer_Release(&sv); return NULL; }
    if (get_f(oo, &ov, 0, 8, 0, fn, "outoff") < 0) { PyBuffer_Release(&sv); PyBuffer_Release(&tv); return NULL; }
    if (get_f(dobj, &dv, 1, isz, 0, fn, "dst") < 0) {
        PyBuffer_Release(&sv); PyBuffer_Release(&tv); PyBuffer_Release(&ov); return NULL;
    }
    const Py_ssize_t K = tv.len / 8, M = ov.len / 8;
    const int64_t *tapoff = (const int64_t *)tv.buf, *outoff = (const int64_t *)ov.buf;
    int64_t lo = 0, hi = 0, olo = 0, ohi = 0;
    for (Py_ssize_t i = 0; i < K; i++) { if (i == 0 || tapoff[i] < lo) lo = tapoff[i]; if (i == 0 || tapoff[i] > hi) hi = tapoff[i]; }
    for (Py_ssize_t j = 0; j < M; j++) { if (j == 0 || outoff[j] < olo) olo = outoff[j]; if (j == 0 || outoff[j] > ohi) ohi = outoff[j]; }
    const Py_ssize_t nwin = scatter ? dv.len / isz : sv.len / isz, nrow = scatter ? sv.len / isz : dv.len / isz;
    if (K && M && (lo + olo < 0 || hi + ohi >= nwin || nrow < K * M)) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: offsets [%lld, %lld] outside the windowed buffer of %zd items, "
                     "or the rows hold %zd items for %zd x %zd", fn, (long long)(lo + olo), (long long)(hi + ohi), nwin,
                     nrow, K, M);
        PyBuffer_Release(&sv); PyBuffer_Release(&tv); PyBuffer_Release(&ov); PyBuffer_Release(&dv);
        return NULL;
    }
    const void *src = sv.buf;
    void *dst = dv.buf;
    Py_BEGIN_ALLOW_THREADS
    if (isz == 2) TAKE_LOOP(uint16_t, =);
    else if (scatter == 2 && isz == 4) TAKE_LOOP(float, +=);
    else if (scatter == 2) TAKE_LOOP(double, +=);
    else if (isz == 4) TAKE_LOOP(uint32_t, =);
    else TAKE_LOOP(uint64_t, =);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&sv); PyBuffer_Release(&tv); PyBuffer_Release(&ov); PyBuffer_Release(&dv);
    Py_RETURN_NONE;
}

/* row_sums(a, rows, length, out): out[r] = the sum of a[r * length : (r + 1) * length] (float32 rows,
   float64 accumulation in 8 lanes in a fixed order, rounded once): the bias gradient from the cotangent's
   frame rows (NumPy's reduction over (N, C, spatial...) minus the channel axis is several times slower) */
static PyObject *row_sums(PyObject *self, PyObject *args)
{
    (void)self;
    const char *fn = "row_sums";
    PyObject *ao, *oo;
    Py_ssize_t rows, len;
    if (!PyArg_ParseTuple(args, "OnnO", &ao, &rows, &len, &oo)) return NULL;
    if (rows < 0 || len < 0) {
        PyErr_Format(PyExc_ValueError, "_conv_kernels.%s: rows %zd and length %zd must be >= 0", fn, rows, len);
        return NULL;
    }
    Py_buffer av, ov;
    if (get_f(ao, &av, 0, 4, rows * len, fn, "a") < 0) return NULL;
    if (get_f(oo, &ov, 1, 4, rows, fn, "out") < 0) { PyBuffer_Release(&av); return NULL; }
    const float *a = (const float *)av.buf;
    float *out = (float *)ov.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t r = 0; r < rows; r++) {
        const float *p = a + r * len;
        double lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        Py_ssize_t j = 0;
        for (; j + 8 <= len; j += 8)
            for (int l = 0; l < 8; l++) lane[l] += (double)p[j + l];
        for (; j < len; j++) lane[j % 8] += (double)p[j];
        out[r] = (float)(((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7])));
    }
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&av); PyBuffer_Release(&ov);
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
    {"copy_blocks", copy_blocks, METH_VARARGS,
     "copy_blocks(src, soff, ss, dst, doff, ds, rows, length, bias, chan): dst[doff[i] + r*ds + j] = "
     "src[soff[i] + r*ss + j] (+ bias[chan[i]]) (float32; offsets int64, None: consecutive blocks)"},
    {"max_pool_bwd", max_pool_bwd, METH_VARARGS,
     "max_pool_bwd(t, ct, cts, kk): cts (kk, m) = the reverse rule of the chain of maxima over the kk rows of t "
     "(float32 or float64) for the cotangent ct (m,)"},
    {"take_taps", take_taps, METH_VARARGS,
     "take_taps(src, tapoff, outoff, dst, mode): gather dst[i*M + j] = src[tapoff[i] + outoff[j]] (0), scatter "
     "dst[tapoff[i] + outoff[j]] = src[i*M + j] (1) or add it there (2: float32/float64) (2/4/8-byte items)"},
    {"row_sums", row_sums, METH_VARARGS,
     "row_sums(a, rows, length, out): out[r] = sum of float32 row r of a (float64 lanes, rounded once)"},
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
