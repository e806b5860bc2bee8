/*
 * Optional compiled kernels of the NumPy backend (runetensor._backend._kernels).
 *
 * Plain C99 against the CPython API only.  Operands are objects supporting
 * the buffer protocol (C-contiguous, element type given by the function);
 * each call works on the element range [lo, hi) so that the Python thread
 * pool can run chunks of one operation in parallel: every loop runs with the
 * GIL released.  If this module fails to build or import, the backend takes
 * its NumPy paths (same results; see runetensor/_backend/_fast.py).
 *
 * Low-precision floats (bfloat16, float8_e4m3fn, float8_e5m2) are computed
 * exactly as the plain path does: widen to float32 (exact), one float32
 * operation, round back to the nearest even with NaN canonicalised to the
 * sign-preserving quiet NaN (what ml_dtypes' float32 -> bfloat16 / float8
 * casts give).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include "_kernels_avx512.h"

/* set at import: the CPU runs the AVX-512 loops of _kernels_avx512.c (set_avx512 turns them off) */
static int avx512_ok = 0;

/* The small helpers below are always inlined: called out of line from the
   AVX2 clones of the loops (see HOT) they would run as baseline SSE code, and
   the calls, made for every element of a block that holds a NaN, cost
   hundreds of nanoseconds each (AVX/SSE transitions). */
#if defined(__GNUC__) || defined(__clang__)
#define INLINE static inline __attribute__((always_inline))
#else
#define INLINE static inline
#endif

/* ------------------------------------------------------------------------ */
/* bfloat16 <-> float32                                                     */
/* ------------------------------------------------------------------------ */
INLINE float bf16_to_f32(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

INLINE uint16_t f32_to_bf16(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint32_t nan = ((u >> 16) & 0x8000u) | 0x7fc0u;            /* NaN: quiet, sign kept */
    uint32_t r = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;        /* round to nearest even */
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : r);  /* branch-free: vectorises */
}

/* ------------------------------------------------------------------------ */
/* float16 <-> float32 (bit manipulation, branch-free so that it vectorises) */
/* ------------------------------------------------------------------------ */
INLINE float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t em = h & 0x7fffu;
    uint32_t normal = (em << 13) + ((uint32_t)(127 - 15) << 23);
    uint32_t special = (em << 13) | 0x7f800000u;               /* inf / NaN, payload kept */
    float sub = (float)(int32_t)em * 5.9604644775390625e-8f;    /* zero / subnormal: em * 2^-24, exact */
    uint32_t subu;
    memcpy(&subu, &sub, 4);
    uint32_t ms = 0u - (uint32_t)(em >= 0x7c00u);   /* all ones where inf / NaN */
    uint32_t mn = 0u - (uint32_t)(em >= 0x0400u);   /* all ones where normal (or inf / NaN) */
    uint32_t u = (special & ms) | (normal & mn & ~ms) | (subu & ~mn);
    u |= sign;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* nearest even, overflow to inf, gradual underflow; NaN keeps its sign and
   the top 10 payload bits (NumPy's npy_float_to_half; at least one set) */
INLINE uint16_t f32_to_f16(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    uint32_t sign = (u >> 16) & 0x8000u;
    uint32_t a = u & 0x7fffffffu;
    /* NaN / inf / overflow */
    uint32_t pay = (a & 0x007fffffu) >> 13;
    uint32_t big = 0x7c00u | ((pay | (uint32_t)(pay == 0u)) & (0u - (uint32_t)(a > 0x7f800000u)));
    /* subnormal results (|x| < 2^-14): adding 0.5 lets the FPU round at the right bit */
    float af;
    memcpy(&af, &a, 4);
    float sf = af + 0.5f;
    uint32_t su;
    memcpy(&su, &sf, 4);
    uint32_t subn = su - 0x3f000000u;
    /* normal results: rebias, round to nearest even at bit 13 */
    uint32_t norm = (a + ((uint32_t)(15 - 127) << 23) + 0xfffu + ((a >> 13) & 1u)) >> 13;
    uint32_t mb = 0u - (uint32_t)(a >= 0x47800000u);   /* all ones: beyond float16's range, inf, NaN */
    uint32_t mu = 0u - (uint32_t)(a < 0x38800000u);    /* all ones: subnormal result */
    uint32_t r = (big & mb) | (subn & mu) | (norm & ~mb & ~mu);
    return (uint16_t)(r | sign);
}

enum { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_MAX, OP_MIN };
/* unary ops (neg/abs are sign-bit operations in _fast.sign_op, no float trip) */
enum { UOP_SQUARE, UOP_SQRT };

/* NumPy's float32 maximum/minimum: a NaN in the first operand wins, else the
   comparison picks `a` only when strictly greater (smaller), else `b`
   (max_b_on_tie) -- or `a` when >= (<=) (numpy's scalar loops). The flag is
   probed from NumPy at import (see _fast.py) so that the result matches the
   loop NumPy runs on this machine. */
INLINE float fmax_np(float a, float b, int b_on_tie)
{
    /* selects only, so that the loops vectorise: a NaN `b` fails both
       comparisons and is returned */
    int pick_a = (a != a) | (b_on_tie ? (a > b) : (a >= b));
    return pick_a ? a : b;
}

INLINE float fmin_np(float a, float b, int b_on_tie)
{
    int pick_a = (a != a) | (b_on_tie ? (a < b) : (a <= b));
    return pick_a ? a : b;
}

/* Which NaN an arithmetic op returns when both operands are NaNs depends on
   the machine (x86 returns its first source operand, Arm prefers a
   signalling NaN) and on the operand order the compiler chose, in NumPy's
   loops and here.  So the kernels decide explicitly: a NaN operand, quieted,
   is returned as the result; when both are NaNs, bit (2 * quiet(a) +
   quiet(b)) of `rule` set means `a`, clear means `b`.  `rule` is probed from
   NumPy at import (see _fast.py).  NaNs made from non-NaN operands (inf - inf,
   0 * inf, 0 / 0) are the hardware's default NaN, as in NumPy. */
INLINE float nan_fix(float a, float b, float r, int rule)
{
    uint32_t ua, ub, ur;
    memcpy(&ua, &a, 4);
    memcpy(&ub, &b, 4);
    memcpy(&ur, &r, 4);
    uint32_t an = 0u - (uint32_t)((ua & 0x7fffffffu) > 0x7f800000u);
    uint32_t bn = 0u - (uint32_t)((ub & 0x7fffffffu) > 0x7f800000u);
    uint32_t idx = ((ua >> 21) & 2u) | ((ub >> 22) & 1u);
    uint32_t prefa = 0u - (((uint32_t)rule >> idx) & 1u);
    uint32_t pa = an & (~bn | prefa);
    uint32_t pb = bn & ~pa;
    uint32_t res = ((ua | 0x400000u) & pa) | ((ub | 0x400000u) & pb) | (ur & ~pa & ~pb);
    float f;
    memcpy(&f, &res, 4);
    return f;
}

/* an operand: a buffer of 2-byte (bfloat16, float16) or 1-byte (float8)
   elements (n elements, or 1 = broadcast) or a float32 scalar */
typedef struct {
    Py_buffer view;
    int has_view;
    const uint16_t *p;
    const uint8_t *p8;
    Py_ssize_t len;
    float scalar;
    int is_scalar;
} operand;

/* widens the element at p (format fmt where the type has several) */
typedef float (*widen_fn)(int fmt, const void *p);

static void release_operand(operand *op);

/* PyObject_GetBuffer with the error made specific: "_kernels.<fn>: <what> must be ..."
   (TypeError for an object without the buffer protocol, ValueError for a buffer of the
   wrong kind: read-only where an output is written, not C-contiguous, ...) */
static int get_buf(PyObject *o, Py_buffer *v, int flags, const char *fn, const char *what)
{
    if (PyObject_GetBuffer(o, v, flags) == 0)
        return 0;
    PyObject *t, *val, *tb;
    PyErr_Fetch(&t, &val, &tb);
    PyErr_NormalizeException(&t, &val, &tb);
    const char *kind = (flags & PyBUF_WRITABLE) ? "a writable C-contiguous" :
                       (flags & PyBUF_C_CONTIGUOUS) == PyBUF_C_CONTIGUOUS ? "a C-contiguous" : "a strided";
    if (t != NULL && PyErr_GivenExceptionMatches(t, PyExc_TypeError) && !PyObject_CheckBuffer(o))
        PyErr_Format(PyExc_TypeError, "_kernels.%s: %s must be %s buffer, got %.100s",
                     fn, what, kind, Py_TYPE(o)->tp_name);
    else if (t != NULL && (PyErr_GivenExceptionMatches(t, PyExc_BufferError) ||
                           PyErr_GivenExceptionMatches(t, PyExc_ValueError) ||
                           PyErr_GivenExceptionMatches(t, PyExc_TypeError)))
        PyErr_Format(PyExc_ValueError, "_kernels.%s: %s must be %s buffer (%S)", fn, what, kind,
                     val != NULL ? val : Py_None);
    else {
        PyErr_Restore(t, val, tb);
        return -1;
    }
    Py_XDECREF(t);
    Py_XDECREF(val);
    Py_XDECREF(tb);
    return -1;
}

static int get_operand(PyObject *o, operand *op, Py_ssize_t need, Py_ssize_t itemsize, int fmt, widen_fn widen,
                       const char *fn, const char *what)
{
    op->has_view = 0;
    op->is_scalar = 0;
    op->p = NULL;
    op->p8 = NULL;
    op->len = 0;
    if (PyFloat_Check(o)) {
        op->scalar = (float)PyFloat_AS_DOUBLE(o);
        op->is_scalar = 1;
        return 0;
    }
    if (get_buf(o, &op->view, PyBUF_C_CONTIGUOUS, fn, what) < 0)
        return -1;
    op->has_view = 1;
    op->p = (const uint16_t *)op->view.buf;
    op->p8 = (const uint8_t *)op->view.buf;
    if (op->view.itemsize != itemsize) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: %s has %zd-byte items; expected %zd-byte items",
                     fn, what, op->view.itemsize, itemsize);
        release_operand(op);  /* a rejected operand must not keep its buffer export */
        return -1;
    }
    op->len = op->view.len / itemsize;
    if (op->len != 1 && op->len < need) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: %s holds %zd elements; expected 1 (broadcast) "
                     "or at least %zd (the range's end)", fn, what, op->len, need);
        release_operand(op);
        return -1;
    }
    if (op->len == 1) {
        op->scalar = widen(fmt, op->view.buf);
        op->is_scalar = 1;
    }
    return 0;
}


static void release_operand(operand *op)
{
    if (op->has_view) PyBuffer_Release(&op->view);
    op->has_view = 0;
}

/* a C-contiguous source buffer of `itemsize`-byte items holding at least `need` of them */
static int get_src(PyObject *o, Py_buffer *v, Py_ssize_t itemsize, Py_ssize_t need, const char *fn, const char *what)
{
    if (get_buf(o, v, PyBUF_C_CONTIGUOUS, fn, what) < 0)
        return -1;
    if (v->itemsize != itemsize) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: %s has %zd-byte items; expected %zd-byte items",
                     fn, what, v->itemsize, itemsize);
        PyBuffer_Release(v);
        return -1;
    }
    if (v->len / itemsize < need) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: %s holds %zd elements; expected at least %zd",
                     fn, what, v->len / itemsize, need);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

/* the output: a writable C-contiguous buffer of `itemsize`-byte items, at least `need` of them */
static int get_out(PyObject *o, Py_buffer *v, Py_ssize_t itemsize, Py_ssize_t need, const char *fn)
{
    if (get_buf(o, v, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE, fn, "out") < 0)
        return -1;
    if (v->itemsize != itemsize) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: out has %zd-byte items; expected %zd-byte items",
                     fn, v->itemsize, itemsize);
        PyBuffer_Release(v);
        return -1;
    }
    if (v->len / itemsize < need) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: out holds %zd elements; expected at least %zd",
                     fn, v->len / itemsize, need);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

/* an element range [lo, hi) with 0 <= lo <= hi (ValueError naming the function otherwise) */
static int check_range(const char *fn, const char *what, Py_ssize_t lo, Py_ssize_t hi)
{
    if (lo < 0 || hi < lo) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: %s [%zd, %zd) is invalid; expected 0 <= start <= end",
                     fn, what, lo, hi);
        return -1;
    }
    return 0;
}

/* Runtime dispatch to an AVX2 clone of the hot loops where the compiler and
   the loader support it (GCC/clang on x86-64 ELF); the default clone is
   baseline SSE2.  No -march: the same binary runs on any x86-64 machine. */
#if defined(__x86_64__) && defined(__ELF__) && \
    ((defined(__clang__) && __clang_major__ >= 14) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define HOT __attribute__((target_clones("avx2", "default")))
#else
#define HOT
#endif

/* the three operand layouts (scalar-array, array-scalar, array-array) over [LO, HI) */
#define LOOP3(LO, HI, W, N, EXPR)                                                              \
    if (as_) { for (Py_ssize_t i = LO; i < HI; i++) {                                          \
        float a = sa, b = W(pb[i]); out[i] = N(EXPR); } }                                      \
    else if (bs_) { for (Py_ssize_t i = LO; i < HI; i++) {                                     \
        float a = W(pa[i]), b = sb; out[i] = N(EXPR); } }                                      \
    else { for (Py_ssize_t i = LO; i < HI; i++) {                                              \
        float a = W(pa[i]), b = W(pb[i]); out[i] = N(EXPR); } }

/* arithmetic in blocks: a NaN operand always gives a NaN result, so blocks
   with a NaN result are redone choosing the NaN explicitly (nan_fix) */
#define ARITH(W, N, OPX)                                                               \
    for (Py_ssize_t i0 = lo, i1; i0 < hi; i0 = i1) {  /* no i0 + 1024 past hi: no overflow */ \
        i1 = hi - i0 < 1024 ? hi : i0 + 1024;                                                  \
        unsigned nanr = 0;                                                                     \
        if (as_) { for (Py_ssize_t i = i0; i < i1; i++) {                                      \
            float a = sa, b = W(pb[i]), r = a OPX b; nanr |= (unsigned)(r != r); out[i] = N(r); } } \
        else if (bs_) { for (Py_ssize_t i = i0; i < i1; i++) {                                 \
            float a = W(pa[i]), b = sb, r = a OPX b; nanr |= (unsigned)(r != r); out[i] = N(r); } } \
        else { for (Py_ssize_t i = i0; i < i1; i++) {                                          \
            float a = W(pa[i]), b = W(pb[i]), r = a OPX b; nanr |= (unsigned)(r != r); out[i] = N(r); } } \
        if (nanr) { LOOP3(i0, i1, W, N, nan_fix(a, b, a OPX b, rule)) }                        \
    }
/* one type's binary loops: the arithmetic with its NaN rule, maximum /
   minimum with their tie rule (T: the element type) */
#define BIN_BODY(T, W, N)                                                                      \
    if (as_ && bs_) {  /* both broadcast: one value */                                         \
        float a = sa, b = sb, r;                                                               \
        switch (opc) {                                                                         \
        case OP_ADD: r = nan_fix(a, b, a + b, rule); break;                                    \
        case OP_SUB: r = nan_fix(a, b, a - b, rule); break;                                    \
        case OP_MUL: r = nan_fix(a, b, a * b, rule); break;                                    \
        case OP_DIV: r = nan_fix(a, b, a / b, rule); break;                                    \
        case OP_MAX: r = fmax_np(a, b, rule); break;                                           \
        default: r = fmin_np(a, b, rule); break;                                               \
        }                                                                                      \
        T v = N(r);                                                                            \
        for (Py_ssize_t i = lo; i < hi; i++) out[i] = v;                                       \
        return;                                                                                \
    }                                                                                          \
    switch (opc) {                                                                             \
    case OP_ADD: ARITH(W, N, +) break;                                                         \
    case OP_SUB: ARITH(W, N, -) break;                                                         \
    case OP_MUL: ARITH(W, N, *) break;                                                         \
    case OP_DIV: ARITH(W, N, /) break;                                                         \
    case OP_MAX: if (rule) { LOOP3(lo, hi, W, N, fmax_np(a, b, 1)) }                           \
                 else { LOOP3(lo, hi, W, N, fmax_np(a, b, 0)) } break;                         \
    case OP_MIN: if (rule) { LOOP3(lo, hi, W, N, fmin_np(a, b, 1)) }                           \
                 else { LOOP3(lo, hi, W, N, fmin_np(a, b, 0)) } break;                         \
    }

/* rule: the NaN rule for add sub mul div, the tie rule for maximum minimum */
HOT static void bin_loop(int opc, int rule, const uint16_t *pa, float sa, int as_,
                         const uint16_t *pb, float sb, int bs_, uint16_t *out, Py_ssize_t lo, Py_ssize_t hi)
{
#ifdef HAVE_AVX512_PATH
    if (avx512_ok && opc <= OP_DIV && !(as_ && bs_)) {
        rt512_bf16_arith(opc, rule, pa, sa, as_, pb, sb, bs_, out, lo, hi);
        return;
    }
#endif
    BIN_BODY(uint16_t, bf16_to_f32, f32_to_bf16)
}

#define UN_CASE(EXPR)                                                          \
    for (Py_ssize_t i = lo; i < hi; i++) {                                     \
        float a = bf16_to_f32(pa[i]);                                          \
        out[i] = f32_to_bf16(EXPR);                                            \
    }

HOT static void un_loop(int opc, const uint16_t *pa, uint16_t *out, Py_ssize_t lo, Py_ssize_t hi)
{
    switch (opc) {
    case UOP_SQUARE: UN_CASE(a * a) break;
    case UOP_SQRT: UN_CASE(sqrtf(a)) break;
    }
}

/* conversion loops over [lo, hi), called once per range through a pointer
   (fmt: the float8 format; unused by the others) */
typedef void (*conv_loop)(int fmt, const void *src, void *dst, Py_ssize_t lo, Py_ssize_t hi);

HOT static void widen_loop(int fmt, const void *src, void *dst, Py_ssize_t lo, Py_ssize_t hi)
{
    const uint16_t *a = (const uint16_t *)src;
    float *out = (float *)dst;
    (void)fmt;
    for (Py_ssize_t i = lo; i < hi; i++) out[i] = bf16_to_f32(a[i]);
}

HOT static void narrow_loop(int fmt, const void *src, void *dst, Py_ssize_t lo, Py_ssize_t hi)
{
    const float *a = (const float *)src;
    uint16_t *out = (uint16_t *)dst;
    (void)fmt;
    for (Py_ssize_t i = lo; i < hi; i++) out[i] = f32_to_bf16(a[i]);
}

HOT static void f16_widen_portable(const uint16_t *a, float *o, Py_ssize_t lo, Py_ssize_t hi)
{
    for (Py_ssize_t i = lo; i < hi; i++) o[i] = f16_to_f32(a[i]);
}

HOT static void f16_narrow_portable(const float *a, uint16_t *o, Py_ssize_t lo, Py_ssize_t hi)
{
    for (Py_ssize_t i = lo; i < hi; i++) o[i] = f32_to_f16(a[i]);
}

/* F16C: the CPU's conversion instructions, 8 values per instruction.  They
   agree with f16_to_f32 / f32_to_f16 on every non-NaN value (exact widening;
   nearest-even narrowing with overflow to inf and gradual underflow) but
   quiet signalling NaNs, where NumPy keeps the payload as it is: NaN lanes
   are rebuilt from the bits (vector blends, only in blocks holding a NaN).  Chosen at import when the
   CPU has F16C and AVX2 (f16c_ok). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define HAVE_F16C_PATH 1
__attribute__((target("avx2,f16c"))) static void f16_widen_f16c(const uint16_t *a, float *o,
                                                               Py_ssize_t lo, Py_ssize_t hi)
{
    Py_ssize_t i = lo;
    for (; hi - i >= 8; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(a + i));
        __m256 f = _mm256_cvtph_ps(h);
        __m256 nan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
        if (_mm256_movemask_ps(nan)) {  /* NaN lanes: sign, all-ones exponent, payload as it is */
            __m256i h32 = _mm256_cvtepu16_epi32(h);
            __m256i bits = _mm256_or_si256(
                _mm256_or_si256(_mm256_slli_epi32(_mm256_and_si256(h32, _mm256_set1_epi32(0x8000)), 16),
                                _mm256_set1_epi32(0x7f800000)),
                _mm256_slli_epi32(_mm256_and_si256(h32, _mm256_set1_epi32(0x3ff)), 13));
            f = _mm256_blendv_ps(f, _mm256_castsi256_ps(bits), nan);
        }
        _mm256_storeu_ps(o + i, f);
    }
    for (; i < hi; i++) o[i] = f16_to_f32(a[i]);
}

__attribute__((target("avx2,f16c"))) static void f16_narrow_f16c(const float *a, uint16_t *o,
                                                                Py_ssize_t lo, Py_ssize_t hi)
{
    Py_ssize_t i = lo;
    for (; hi - i >= 8; i += 8) {
        __m256 f = _mm256_loadu_ps(a + i);
        __m128i r = _mm256_cvtps_ph(f, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
        __m256 nan = _mm256_cmp_ps(f, f, _CMP_UNORD_Q);
        if (_mm256_movemask_ps(nan)) {  /* NaN lanes: sign | 0x7c00 | top 10 payload bits (at least 1) */
            __m256i u = _mm256_castps_si256(f);
            __m256i pay = _mm256_max_epu32(_mm256_srli_epi32(_mm256_and_si256(u, _mm256_set1_epi32(0x7fffff)), 13),
                                           _mm256_set1_epi32(1));
            __m256i bits = _mm256_or_si256(
                _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x8000)),
                                _mm256_set1_epi32(0x7c00)), pay);
            __m256i r32 = _mm256_blendv_epi8(_mm256_cvtepu16_epi32(r), bits, _mm256_castps_si256(nan));
            r = _mm256_castsi256_si128(_mm256_permute4x64_epi64(_mm256_packus_epi32(r32, r32), 0x08));
        }
        _mm_storeu_si128((__m128i *)(o + i), r);
    }
    for (; i < hi; i++) o[i] = f32_to_f16(a[i]);
}
#endif

static int f16c_ok = 0;  /* set at import: the CPU runs the F16C loops */

static void f16_widen_loop(int fmt, const void *src, void *dst, Py_ssize_t lo, Py_ssize_t hi)
{
    (void)fmt;
#ifdef HAVE_F16C_PATH
    if (f16c_ok) { f16_widen_f16c((const uint16_t *)src, (float *)dst, lo, hi); return; }
#endif
    f16_widen_portable((const uint16_t *)src, (float *)dst, lo, hi);
}

static void f16_narrow_loop(int fmt, const void *src, void *dst, Py_ssize_t lo, Py_ssize_t hi)
{
    (void)fmt;
#ifdef HAVE_F16C_PATH
    if (f16c_ok) { f16_narrow_f16c((const float *)src, (uint16_t *)dst, lo, hi); return; }
#endif
    f16_narrow_portable((const float *)src, (uint16_t *)dst, lo, hi);
}

/* float16: NumPy's half loops compute add/sub/mul/div in float32 and round once;
   maximum/minimum compare and return an input's bits unchanged (a NaN first
   operand, else the first operand when >= (<=), else the second) */
#define H_SEL(CMP)                                                                             \
    for (Py_ssize_t i = lo; i < hi; i++) {                                                     \
        uint16_t ha = as_ ? ra : pa[i], hb = bs_ ? rb : pb[i];                                 \
        float a = f16_to_f32(ha), b = f16_to_f32(hb);                                          \
        out[i] = (a != a || (CMP)) ? ha : hb;                                                  \
    }

#ifdef HAVE_F16C_PATH
/* add/sub/mul/div of float16 with the F16C conversions: blocks of 256 widened
   into float32 scratch, the op, rounded back; a block with a NaN result is
   redone element by element with the NaN rule (as ARITH) */
#define H_BLOCK 256
__attribute__((target("avx2,f16c"))) static void h_arith_f16c(int opc, int rule, const uint16_t *pa, float sa,
                                                             int as_, const uint16_t *pb, float sb, int bs_,
                                                             uint16_t *out, Py_ssize_t lo, Py_ssize_t hi)
{
    float A[H_BLOCK], B[H_BLOCK], R[H_BLOCK];
    if (as_) for (int k = 0; k < H_BLOCK; k++) A[k] = sa;
    if (bs_) for (int k = 0; k < H_BLOCK; k++) B[k] = sb;
    for (Py_ssize_t i0 = lo, n; i0 < hi; i0 += n) {
        n = hi - i0 < H_BLOCK ? hi - i0 : H_BLOCK;
        if (!as_) f16_widen_f16c(pa + i0, A, 0, n);
        if (!bs_) f16_widen_f16c(pb + i0, B, 0, n);
        switch (opc) {
        case OP_ADD: for (Py_ssize_t k = 0; k < n; k++) R[k] = A[k] + B[k]; break;
        case OP_SUB: for (Py_ssize_t k = 0; k < n; k++) R[k] = A[k] - B[k]; break;
        case OP_MUL: for (Py_ssize_t k = 0; k < n; k++) R[k] = A[k] * B[k]; break;
        default: for (Py_ssize_t k = 0; k < n; k++) R[k] = A[k] / B[k]; break;
        }
        int nanr = 0;
        for (Py_ssize_t k = 0; k < n; k++) nanr |= R[k] != R[k];
        if (nanr) {
            for (Py_ssize_t k = 0; k < n; k++) {
                float a = A[k], b = B[k];
                R[k] = nan_fix(a, b, opc == OP_ADD ? a + b : opc == OP_SUB ? a - b : opc == OP_MUL ? a * b : a / b,
                               rule);
            }
        }
        f16_narrow_f16c(R, out + i0, 0, n);
    }
}
#endif

HOT static void h_loop(int opc, int rule, const uint16_t *pa, float sa, uint16_t ra, int as_,
                       const uint16_t *pb, float sb, uint16_t rb, int bs_, uint16_t *out,
                       Py_ssize_t lo, Py_ssize_t hi)
{
#ifdef HAVE_AVX512_PATH
    if (avx512_ok && opc <= OP_DIV && !(as_ && bs_)) {
        rt512_f16_arith(opc, rule, pa, ra, as_, pb, rb, bs_, out, lo, hi);
        return;
    }
#endif
#ifdef HAVE_F16C_PATH
    if (f16c_ok && opc <= OP_DIV) {
        h_arith_f16c(opc, rule, pa, sa, as_, pb, sb, bs_, out, lo, hi);
        return;
    }
#endif
    switch (opc) {
    case OP_ADD: ARITH(f16_to_f32, f32_to_f16, +) break;
    case OP_SUB: ARITH(f16_to_f32, f32_to_f16, -) break;
    case OP_MUL: ARITH(f16_to_f32, f32_to_f16, *) break;
    case OP_DIV: ARITH(f16_to_f32, f32_to_f16, /) break;
    case OP_MAX: H_SEL(a >= b) break;
    case OP_MIN: H_SEL(a <= b) break;
    }
}

/* ------------------------------------------------------------------------ */
/* float8 (e4m3fn, e5m2) <-> float32, as ml_dtypes converts                 */
/* ------------------------------------------------------------------------ */
/* Widening is exact; every NaN widens to the float32 quiet NaN of its sign
   (0x7fc00000 | sign), as ml_dtypes does.  Narrowing rounds to nearest even;
   e4m3fn has no infinities: NaN, +-inf and everything that rounds beyond 448
   give the NaN of the sign (0x7f | sign); e5m2 overflows to +-inf and every
   NaN gives 0x7e | sign.  -0 stays -0.  Branch-free, so the loops vectorise. */
INLINE float e4m3_to_f32(uint8_t h)
{
    uint32_t sign = (uint32_t)(h & 0x80u) << 24;
    uint32_t em = h & 0x7fu;
    uint32_t normal = (em << 20) + ((uint32_t)(127 - 7) << 23);
    float sub = (float)(int32_t)em * 0.001953125f;            /* em * 2^-9, exact */
    uint32_t subu;
    memcpy(&subu, &sub, 4);
    uint32_t mnan = 0u - (uint32_t)(em == 0x7fu);
    uint32_t mn = 0u - (uint32_t)(em >= 0x08u);
    uint32_t u = (0x7fc00000u & mnan) | (normal & mn & ~mnan) | (subu & ~mn);
    u |= sign;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

INLINE float e5m2_to_f32(uint8_t h)
{
    uint32_t sign = (uint32_t)(h & 0x80u) << 24;
    uint32_t em = h & 0x7fu;
    uint32_t normal = (em << 21) + ((uint32_t)(127 - 15) << 23);
    float sub = (float)(int32_t)em * 1.52587890625e-5f;       /* em * 2^-16, exact */
    uint32_t subu;
    memcpy(&subu, &sub, 4);
    uint32_t ms = 0u - (uint32_t)(em >= 0x7cu);                /* inf / NaN */
    uint32_t special = em == 0x7cu ? 0x7f800000u : 0x7fc00000u;
    uint32_t mn = 0u - (uint32_t)(em >= 0x04u);
    uint32_t u = (special & ms) | (normal & mn & ~ms) | (subu & ~mn);
    u |= sign;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

INLINE uint8_t f32_to_e4m3(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7fffffffu;
    /* subnormal results (|x| < 2^-6): the FPU rounds |x| + 2^14 at 2^-9 */
    float af;
    memcpy(&af, &a, 4);
    float sf = af + 16384.0f;
    uint32_t su;
    memcpy(&su, &sf, 4);
    uint32_t subn = su - 0x46800000u;
    /* normal results: rebias, round to nearest even at bit 20; NaN, inf and
       overflow all land at or above 0x7f, the NaN */
    uint32_t norm = (a - ((uint32_t)(127 - 7) << 23) + 0x7ffffu + ((a >> 20) & 1u)) >> 20;
    norm = norm > 0x7fu ? 0x7fu : norm;
    uint32_t mu = 0u - (uint32_t)(a < 0x3c800000u);
    return (uint8_t)(((subn & mu) | (norm & ~mu)) | sign);
}

INLINE uint8_t f32_to_e5m2(float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    uint32_t sign = (u >> 24) & 0x80u;
    uint32_t a = u & 0x7fffffffu;
    float af;
    memcpy(&af, &a, 4);
    float sf = af + 128.0f;                                   /* |x| < 2^-14: rounds at 2^-16 */
    uint32_t su;
    memcpy(&su, &sf, 4);
    uint32_t subn = su - 0x43000000u;
    uint32_t norm = (a - ((uint32_t)(127 - 15) << 23) + 0xfffffu + ((a >> 21) & 1u)) >> 21;
    norm = norm > 0x7cu ? 0x7cu : norm;                       /* overflow, inf: inf */
    norm = a > 0x7f800000u ? 0x7eu : norm;                    /* NaN */
    uint32_t mu = 0u - (uint32_t)(a < 0x38800000u);
    return (uint8_t)(((subn & mu) | (norm & ~mu)) | sign);
}

HOT static void e4m3_loop(int opc, int rule, const uint8_t *pa, float sa, int as_,
                          const uint8_t *pb, float sb, int bs_, uint8_t *out, Py_ssize_t lo, Py_ssize_t hi)
{
    BIN_BODY(uint8_t, e4m3_to_f32, f32_to_e4m3)
}

HOT static void e5m2_loop(int opc, int rule, const uint8_t *pa, float sa, int as_,
                          const uint8_t *pb, float sb, int bs_, uint8_t *out, Py_ssize_t lo, Py_ssize_t hi)
{
    BIN_BODY(uint8_t, e5m2_to_f32, f32_to_e5m2)
}

/* a unary op of a float8 value depends on its 8 bits only: the loop looks the
   result up in a 256-entry table computed (widen, op, round) for this call */
#define F8_UN(W, N)                                                                            \
    uint8_t tab[256];                                                                          \
    for (int v = 0; v < 256; v++) {                                                            \
        float a = W((uint8_t)v), r;                                                            \
        switch (opc) {                                                                         \
        case UOP_SQUARE: r = a * a; break;                                                     \
        default: r = sqrtf(a); break;                                                          \
        }                                                                                      \
        tab[v] = N(r);                                                                         \
    }                                                                                          \
    for (Py_ssize_t i = lo; i < hi; i++) out[i] = tab[pa[i]];

HOT static void e4m3_un(int opc, const uint8_t *pa, uint8_t *out, Py_ssize_t lo, Py_ssize_t hi)
{
    F8_UN(e4m3_to_f32, f32_to_e4m3)
}

HOT static void e5m2_un(int opc, const uint8_t *pa, uint8_t *out, Py_ssize_t lo, Py_ssize_t hi)
{
    F8_UN(e5m2_to_f32, f32_to_e5m2)
}

/* float8 (format 0: e4m3fn, 1: e5m2) -> float32 and float32 -> float8 over [lo, hi) */
static void widen8_loop(int fmt, const void *src, void *dst, Py_ssize_t lo, Py_ssize_t hi)
{
    const uint8_t *a = (const uint8_t *)src;
    float *o = (float *)dst;
    if (fmt) for (Py_ssize_t i = lo; i < hi; i++) o[i] = e5m2_to_f32(a[i]);
    else for (Py_ssize_t i = lo; i < hi; i++) o[i] = e4m3_to_f32(a[i]);
}

HOT static void narrow8_loop(int fmt, const void *src, void *dst, Py_ssize_t lo, Py_ssize_t hi)
{
    const float *a = (const float *)src;
    uint8_t *o = (uint8_t *)dst;
    if (fmt) for (Py_ssize_t i = lo; i < hi; i++) o[i] = f32_to_e5m2(a[i]);
    else for (Py_ssize_t i = lo; i < hi; i++) o[i] = f32_to_e4m3(a[i]);
}

/* ------------------------------------------------------------------------ */
/* Python wrappers: shared argument parsing, buffer checks, GIL release      */
/* ------------------------------------------------------------------------ */
/* operand widening for get_operand (a broadcast element) */
static float widen_bf16(int fmt, const void *p) { (void)fmt; return bf16_to_f32(*(const uint16_t *)p); }
static float widen_f16(int fmt, const void *p) { (void)fmt; return f16_to_f32(*(const uint16_t *)p); }
static float widen_f8(int fmt, const void *p)
{
    return fmt ? e5m2_to_f32(*(const uint8_t *)p) : e4m3_to_f32(*(const uint8_t *)p);
}

/* a float8 format argument: 0 (e4m3fn) or 1 (e5m2) */
static int check_fmt(const char *fn, int fmt)
{
    if (fmt < 0 || fmt > 1) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: format %d is unknown; expected 0 (float8_e4m3fn) "
                     "or 1 (float8_e5m2)", fn, fmt);
        return -1;
    }
    return 0;
}

/* (fmt,) src, dst, lo, hi: dst[lo:hi] = convert(src[lo:hi]); with_fmt: the
   arguments start with a float8 format (0 or 1) */
static PyObject *convert_call(PyObject *args, int with_fmt, const char *fn,
                              Py_ssize_t src_itemsize, Py_ssize_t dst_itemsize, conv_loop loop)
{
    int fmt = 0;
    PyObject *ao, *oo;
    Py_ssize_t lo, hi;
    if (with_fmt ? !PyArg_ParseTuple(args, "iOOnn", &fmt, &ao, &oo, &lo, &hi)
                 : !PyArg_ParseTuple(args, "OOnn", &ao, &oo, &lo, &hi))
        return NULL;
    if ((with_fmt && check_fmt(fn, fmt) < 0) || check_range(fn, "range", lo, hi) < 0)
        return NULL;
    Py_buffer av, ov;
    if (get_src(ao, &av, src_itemsize, hi, fn, "src") < 0) return NULL;
    if (get_out(oo, &ov, dst_itemsize, hi, fn) < 0) { PyBuffer_Release(&av); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    loop(fmt, av.buf, ov.buf, lo, hi);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&av);
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* a binary op's loop over [lo, hi), called once per range through a pointer */
typedef void (*bin_range)(int fmt, int opc, int rule, const operand *A, const operand *B,
                          void *out, Py_ssize_t lo, Py_ssize_t hi);

static void bf16_bin_range(int fmt, int opc, int rule, const operand *A, const operand *B,
                           void *out, Py_ssize_t lo, Py_ssize_t hi)
{
    (void)fmt;
    bin_loop(opc, rule, A->p, A->scalar, A->is_scalar, B->p, B->scalar, B->is_scalar, (uint16_t *)out, lo, hi);
}

static void f16_bin_range(int fmt, int opc, int rule, const operand *A, const operand *B,
                          void *out, Py_ssize_t lo, Py_ssize_t hi)
{
    (void)fmt;
    /* the raw bits of a broadcast (1-element) operand; never read from an empty buffer */
    uint16_t ra = A->len >= 1 ? A->p[0] : 0, rb = B->len >= 1 ? B->p[0] : 0;
    h_loop(opc, rule, A->p, A->scalar, ra, A->is_scalar, B->p, B->scalar, rb, B->is_scalar,
           (uint16_t *)out, lo, hi);
}

static void f8_bin_range(int fmt, int opc, int rule, const operand *A, const operand *B,
                         void *out, Py_ssize_t lo, Py_ssize_t hi)
{
    if (fmt)
        e5m2_loop(opc, rule, A->p8, A->scalar, A->is_scalar, B->p8, B->scalar, B->is_scalar, (uint8_t *)out, lo, hi);
    else
        e4m3_loop(opc, rule, A->p8, A->scalar, A->is_scalar, B->p8, B->scalar, B->is_scalar, (uint8_t *)out, lo, hi);
}

/* a claim job's chunk function, and the runner that shares chunks with polling helpers (below, at the sums) */
typedef void (*chunk_fn)(void *ctx, int64_t k);
static void claim_run(chunk_fn fn, void *ctx, int64_t *counter, int64_t nparts, int share);
static int get_w8(PyObject *o, Py_buffer *v, Py_ssize_t need, const char *fn, const char *what);

struct bin_job { bin_range loop; int fmt, opc, rule; const operand *A, *B; void *out; Py_ssize_t lo, hi, chunk; };

static void bin_chunk(void *ctx, int64_t k)
{
    struct bin_job *j = (struct bin_job *)ctx;
    Py_ssize_t lo = j->lo + (Py_ssize_t)k * j->chunk, hi = j->hi - lo < j->chunk ? j->hi : lo + j->chunk;
    j->loop(j->fmt, j->opc, j->rule, j->A, j->B, j->out, lo, hi);
}

/* (fmt,) op, a, b, out, lo, hi, rule; views_only: both operands must be buffers */
static PyObject *binary_call(PyObject *args, int with_fmt, const char *fn, Py_ssize_t itemsize,
                             widen_fn widen, int views_only, bin_range loop)
{
    int fmt = 0, opc, rule, share = 0;
    PyObject *ao, *bo, *oo, *co = NULL;
    Py_ssize_t lo, hi, chunk = 0;
    if (with_fmt ? !PyArg_ParseTuple(args, "iiOOOnni|nOp", &fmt, &opc, &ao, &bo, &oo, &lo, &hi, &rule,
                                     &chunk, &co, &share)
                 : !PyArg_ParseTuple(args, "iOOOnni|nOp", &opc, &ao, &bo, &oo, &lo, &hi, &rule, &chunk, &co, &share))
        return NULL;
    if (co != NULL && chunk < 1) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: chunk %zd is invalid; expected >= 1 with a counter", fn, chunk);
        return NULL;
    }
    if (with_fmt && check_fmt(fn, fmt) < 0) return NULL;
    if (opc < OP_ADD || opc > OP_MIN) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: op %d is unknown; expected %d..%d (OP_ADD..OP_MIN)",
                     fn, opc, (int)OP_ADD, (int)OP_MIN);
        return NULL;
    }
    if (check_range(fn, "range", lo, hi) < 0) return NULL;
    if (views_only && (PyFloat_Check(ao) || PyFloat_Check(bo))) {
        PyErr_Format(PyExc_TypeError, "_kernels.%s: operands must be buffers, got a float", fn);
        return NULL;
    }
    operand A, B;
    Py_buffer ov;
    if (get_operand(ao, &A, hi, itemsize, fmt, widen, fn, "a") < 0) return NULL;
    if (get_operand(bo, &B, hi, itemsize, fmt, widen, fn, "b") < 0) { release_operand(&A); return NULL; }
    if (get_out(oo, &ov, itemsize, hi, fn) < 0) { release_operand(&A); release_operand(&B); return NULL; }
    Py_buffer cv;
    if (co != NULL && get_w8(co, &cv, 1, fn, "counter") < 0) {
        release_operand(&A);
        release_operand(&B);
        PyBuffer_Release(&ov);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    if (co == NULL) {
        loop(fmt, opc, rule, &A, &B, ov.buf, lo, hi);
    } else {  /* [lo, hi) in chunks claimed through the counter (shared with polling helpers if share) */
        struct bin_job job = {loop, fmt, opc, rule, &A, &B, ov.buf, lo, hi, chunk};
        claim_run(bin_chunk, &job, (int64_t *)cv.buf, (hi - lo) / chunk + ((hi - lo) % chunk != 0), share);
    }
    Py_END_ALLOW_THREADS
    if (co != NULL) PyBuffer_Release(&cv);
    release_operand(&A);
    release_operand(&B);
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* a unary op's loop over [lo, hi), called once per range through a pointer */
typedef void (*un_range)(int fmt, int opc, const operand *A, void *out, Py_ssize_t lo, Py_ssize_t hi);

static void bf16_un_range(int fmt, int opc, const operand *A, void *out, Py_ssize_t lo, Py_ssize_t hi)
{
    (void)fmt;
    un_loop(opc, A->p, (uint16_t *)out, lo, hi);
}

static void f8_un_range(int fmt, int opc, const operand *A, void *out, Py_ssize_t lo, Py_ssize_t hi)
{
    if (fmt)
        e5m2_un(opc, A->p8, (uint8_t *)out, lo, hi);
    else
        e4m3_un(opc, A->p8, (uint8_t *)out, lo, hi);
}

/* (fmt,) op, a, out, lo, hi; the operand must be a buffer of at least hi elements (the
   loops index it elementwise: a 1-element buffer does not broadcast) */
static PyObject *unary_call(PyObject *args, int with_fmt, const char *fn, Py_ssize_t itemsize, un_range loop)
{
    int fmt = 0, opc;
    PyObject *ao, *oo;
    Py_ssize_t lo, hi;
    if (with_fmt ? !PyArg_ParseTuple(args, "iiOOnn", &fmt, &opc, &ao, &oo, &lo, &hi)
                 : !PyArg_ParseTuple(args, "iOOnn", &opc, &ao, &oo, &lo, &hi))
        return NULL;
    if (with_fmt && check_fmt(fn, fmt) < 0) return NULL;
    if (opc < UOP_SQUARE || opc > UOP_SQRT) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: op %d is unknown; expected %d..%d (UOP_SQUARE..UOP_SQRT)",
                     fn, opc, (int)UOP_SQUARE, (int)UOP_SQRT);
        return NULL;
    }
    if (check_range(fn, "range", lo, hi) < 0) return NULL;
    Py_buffer av, ov;
    if (get_src(ao, &av, itemsize, hi, fn, "a") < 0) return NULL;
    if (get_out(oo, &ov, itemsize, hi, fn) < 0) { PyBuffer_Release(&av); return NULL; }
    operand A;
    A.has_view = 0;
    A.is_scalar = 0;
    A.p = (const uint16_t *)av.buf;
    A.p8 = (const uint8_t *)av.buf;
    A.len = av.len / itemsize;
    A.scalar = 0.0f;
    Py_BEGIN_ALLOW_THREADS
    loop(fmt, opc, &A, ov.buf, lo, hi);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&av);
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

static PyObject *bf16_binary(PyObject *self, PyObject *args)
{
    return binary_call(args, 0, "bf16_binary", 2, widen_bf16, 0, bf16_bin_range);
}

static PyObject *bf16_unary(PyObject *self, PyObject *args)
{
    return unary_call(args, 0, "bf16_unary", 2, bf16_un_range);
}

/* bfloat16 -> float32 (exact) and float32 -> bfloat16 (nearest even) over [lo, hi) */
static PyObject *bf16_to_float32(PyObject *self, PyObject *args)
{
    return convert_call(args, 0, "bf16_to_float32", 2, 4, widen_loop);
}

static PyObject *float32_to_bf16(PyObject *self, PyObject *args)
{
    return convert_call(args, 0, "float32_to_bf16", 4, 2, narrow_loop);
}

HOT static void lut_loop(const uint16_t *a, const uint16_t *t, uint16_t *o, Py_ssize_t lo, Py_ssize_t hi)
{
    for (Py_ssize_t i = lo; i < hi; i++) o[i] = t[a[i]];
}

/* a, table, out, lo, hi: out[i] = table[a[i]] over [lo, hi) for 2-byte items a (table: one result
   per bit pattern, 65536) */
static PyObject *lut16(PyObject *self, PyObject *args)
{
    PyObject *ao, *to, *oo;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OOOnn", &ao, &to, &oo, &lo, &hi)) return NULL;
    if (check_range("lut16", "range", lo, hi) < 0) return NULL;
    Py_buffer av, tv, ov;
    if (get_src(ao, &av, 2, hi, "lut16", "a") < 0) return NULL;
    if (get_src(to, &tv, 2, 65536, "lut16", "table") < 0) { PyBuffer_Release(&av); return NULL; }
    if (get_out(oo, &ov, 2, hi, "lut16") < 0) { PyBuffer_Release(&av); PyBuffer_Release(&tv); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    lut_loop((const uint16_t *)av.buf, (const uint16_t *)tv.buf, (uint16_t *)ov.buf, lo, hi);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&av);
    PyBuffer_Release(&tv);
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

static PyObject *f16_binary(PyObject *self, PyObject *args)
{
    return binary_call(args, 0, "f16_binary", 2, widen_f16, 1, f16_bin_range);
}

static PyObject *f16_to_float32(PyObject *self, PyObject *args)
{
    return convert_call(args, 0, "f16_to_float32", 2, 4, f16_widen_loop);
}

static PyObject *float32_to_f16(PyObject *self, PyObject *args)
{
    return convert_call(args, 0, "float32_to_f16", 4, 2, f16_narrow_loop);
}

static PyObject *f8_binary(PyObject *self, PyObject *args)
{
    return binary_call(args, 1, "f8_binary", 1, widen_f8, 0, f8_bin_range);
}

static PyObject *f8_unary(PyObject *self, PyObject *args)
{
    return unary_call(args, 1, "f8_unary", 1, f8_un_range);
}

static PyObject *f8_to_float32(PyObject *self, PyObject *args)
{
    return convert_call(args, 1, "f8_to_float32", 1, 4, widen8_loop);
}

static PyObject *float32_to_f8(PyObject *self, PyObject *args)
{
    return convert_call(args, 1, "float32_to_f8", 4, 1, narrow8_loop);
}

/* ------------------------------------------------------------------------ */
/* float32 sums                                                             */
/* ------------------------------------------------------------------------ */
#define LANES 32
#define ROWS 16

/* 32 float32 lanes add 16 rows each (independent lanes: SIMD adds), each
   block's lane sums go into 32 float64 lanes, combined pairwise at the end;
   the last, shorter block (fewer than 16 full rows of 32) goes through the
   lanes too, and the last n % 32 values are added in float64.  So every
   float32 lane sum has at most 15 roundings: the error is at most about
   (16 + 1) * eps32 * sum(|x|) plus float64 terms (docs/performance.md).
   Starts from +0.0 (a sum of -0.0s is +0.0, as NumPy's).  Inlined into the
   loops below (one copy per target clone). */
INLINE double lane_sum(const float *x, Py_ssize_t n)
{
    double dacc[LANES];
    for (int j = 0; j < LANES; j++) dacc[j] = 0.0;
    Py_ssize_t i = 0;
    for (; n - i >= LANES * ROWS; i += LANES * ROWS) {
        float acc[LANES];
        for (int j = 0; j < LANES; j++) acc[j] = x[i + j];
        for (int r = 1; r < ROWS; r++)
            for (int j = 0; j < LANES; j++) acc[j] += x[i + r * LANES + j];
        for (int j = 0; j < LANES; j++) dacc[j] += (double)acc[j];
    }
    if (n - i >= LANES) {  /* a partial block: 1 to 15 full rows of 32 */
        Py_ssize_t nr = (n - i) / LANES;
        float acc[LANES];
        for (int j = 0; j < LANES; j++) acc[j] = x[i + j];
        for (Py_ssize_t r = 1; r < nr; r++)
            for (int j = 0; j < LANES; j++) acc[j] += x[i + r * LANES + j];
        for (int j = 0; j < LANES; j++) dacc[j] += (double)acc[j];
        i += nr * LANES;
    }
    double tail = 0.0;
    for (; i < n; i++) tail += (double)x[i];
    for (int w = LANES / 2; w >= 1; w /= 2)
        for (int j = 0; j < w; j++) dacc[j] += dacc[j + w];
    return dacc[0] + tail;
}

HOT static double sum_f32_range(const float *x, Py_ssize_t n)
{
#ifdef HAVE_AVX512_PATH
    if (avx512_ok) return rt512_lane_sum(x, n);
#endif
    return lane_sum(x, n);
}

static PyObject *sum_f32(PyObject *self, PyObject *args)
{
    PyObject *ao;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "Onn", &ao, &lo, &hi))
        return NULL;
    Py_buffer av;
    if (check_range("sum_f32", "range", lo, hi) < 0) return NULL;
    if (get_src(ao, &av, 4, hi, "sum_f32", "src") < 0) return NULL;
    const float *x = (const float *)av.buf;
    double s;
    Py_BEGIN_ALLOW_THREADS
    s = sum_f32_range(x + lo, hi - lo);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&av);
    return PyFloat_FromDouble(s);
}

/* a loop over the index range [lo, hi) (columns or rows) of a C-contiguous
   (rows, cols) float32 matrix, called once per range through a pointer */
typedef void (*mat_loop)(const float *x, Py_ssize_t rows, Py_ssize_t cols, float *out,
                         Py_ssize_t lo, Py_ssize_t hi);

/* Rows are taken COLS_ROWS at a time: each column's running sum is loaded
   once, the rows added to it one after another (still row order: the same
   float32 result as row by row) and stored once.  Besides cutting the
   accumulator's loads and stores, this reads COLS_ROWS rows side by side,
   so the prefetchers follow several streams: with a column range per thread
   (each thread reading part of every row), one row at a time ran at ~2/3 of
   the machine's streaming speed, 8 rows at a time at about full speed. */
#define COLS_ROWS 8

HOT static void cols_loop(const float *x, Py_ssize_t rows, Py_ssize_t cols, float *out,
                          Py_ssize_t c0, Py_ssize_t c1)
{
    /* from +0.0, as NumPy's add.reduce (its identity): a column of -0.0s sums to +0.0, a
       signalling NaN in the first row comes out quieted */
    if (c0 >= c1) return;  /* no column: nothing to read (rows may be anything when cols is 0) */
#ifdef HAVE_AVX512_PATH
    if (avx512_ok) { rt512_cols(x, rows, cols, out, c0, c1); return; }
#endif
    for (Py_ssize_t c = c0; c < c1; c++) out[c] = 0.0f + x[c];
    Py_ssize_t r = 1;
    for (; rows - r >= COLS_ROWS; r += COLS_ROWS) {
        const float *row = x + r * cols;
        for (Py_ssize_t c = c0; c < c1; c++) {
            float a = out[c];
            for (int k = 0; k < COLS_ROWS; k++) a += row[k * cols + c];
            out[c] = a;
        }
    }
    for (; r < rows; r++) {
        const float *row = x + r * cols;
        for (Py_ssize_t c = c0; c < c1; c++) out[c] += row[c];
    }
}

/* out[r] = each row's lane sum (lane_sum, rounded to float32 once; an empty
   row sums to 0) */
HOT static void rows_loop(const float *x, Py_ssize_t rows, Py_ssize_t cols, float *out,
                          Py_ssize_t r0, Py_ssize_t r1)
{
    (void)rows;
#ifdef HAVE_AVX512_PATH
    if (avx512_ok) {
        for (Py_ssize_t r = r0; r < r1; r++)
            out[r] = cols ? (float)rt512_lane_sum(x + r * cols, cols) : 0.0f;
        return;
    }
#endif
    for (Py_ssize_t r = r0; r < r1; r++)
        out[r] = cols ? (float)lane_sum(x + r * cols, cols) : 0.0f;
}

/* src, rows, cols, out, lo, hi: out[lo:hi] from the index range [lo, hi) of
   the C-contiguous (rows, cols) float32 matrix src; over_rows: the range is
   of rows (else of columns); min_rows: the fewest rows accepted */
static PyObject *matrix_call(PyObject *args, const char *fn, int over_rows, Py_ssize_t min_rows, mat_loop loop)
{
    PyObject *ao, *oo;
    Py_ssize_t rows, cols, lo, hi;
    if (!PyArg_ParseTuple(args, "OnnOnn", &ao, &rows, &cols, &oo, &lo, &hi))
        return NULL;
    if (rows < min_rows || cols < 0) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: shape (%zd, %zd) is invalid; expected rows >= %zd and cols >= 0",
                     fn, rows, cols, min_rows);
        return NULL;
    }
    if (cols > 0 && rows > PY_SSIZE_T_MAX / cols) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: shape (%zd, %zd) has more elements than a buffer can hold",
                     fn, rows, cols);
        return NULL;
    }
    if (check_range(fn, over_rows ? "row range" : "column range", lo, hi) < 0) return NULL;
    if (hi > (over_rows ? rows : cols)) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: %s range end %zd is past the last %s (%zd)", fn,
                     over_rows ? "row" : "column", hi, over_rows ? "row" : "column", over_rows ? rows : cols);
        return NULL;
    }
    Py_buffer av, ov;
    if (get_src(ao, &av, 4, rows * cols, fn, "src") < 0) return NULL;
    if (get_out(oo, &ov, 4, hi, fn) < 0) { PyBuffer_Release(&av); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    loop((const float *)av.buf, rows, cols, (float *)ov.buf, lo, hi);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&av);
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* columns c0..c1 of a C-contiguous (rows, cols) float32 matrix: out[c] = sum of
   column c, row after row in float32 (NumPy's order for a leading-axis sum) */
static PyObject *sum_cols_f32(PyObject *self, PyObject *args)
{
    return matrix_call(args, "sum_cols_f32", 0, 1, cols_loop);
}

/* rows r0..r1 of a C-contiguous (rows, cols) float32 matrix: out[r] = sum of
   row r in sum_f32's lane scheme (same error bound; not NumPy's order) */
static PyObject *sum_rows_f32(PyObject *self, PyObject *args)
{
    return matrix_call(args, "sum_rows_f32", 1, 0, rows_loop);
}

/* Chunks claimed through a shared int64 counter: each thread that calls one of the *_claim functions
   below takes the next unclaimed chunk until none is left, with the GIL released throughout (one
   call per thread instead of one per chunk: no GIL hand-off between chunks, so the chunks can be
   small and the threads finish together).  The chunks themselves are fixed by the arguments, so
   the results do not depend on which thread took which chunk, nor on the thread count. */
#if defined(_MSC_VER) && !defined(__clang__)
#include <intrin.h>
#define CLAIM(p) _InterlockedExchangeAdd64((volatile long long *)(p), 1)
#else
#define CLAIM(p) __atomic_fetch_add((p), 1, __ATOMIC_RELAXED)
#endif

/* a writable, 8-byte aligned buffer of 8-byte items, at least `need` of them (the counter, float64
   results; aligned: an atomic add on a counter across two cache lines is a split lock) */
static int get_w8(PyObject *o, Py_buffer *v, Py_ssize_t need, const char *fn, const char *what)
{
    if (get_buf(o, v, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE, fn, what) < 0) return -1;
    if (v->itemsize != 8 || v->len / 8 < need) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: %s must hold at least %zd 8-byte items; got %zd %zd-byte items",
                     fn, what, need, v->len / (v->itemsize ? v->itemsize : 1), v->itemsize);
        PyBuffer_Release(v);
        return -1;
    }
    if (((uintptr_t)v->buf & 7u) != 0) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: %s must be 8-byte aligned", fn, what);
        PyBuffer_Release(v);
        return -1;
    }
    return 0;
}

/* a monotonic clock in nanoseconds and a polite pause for polling loops */
#if defined(_WIN32)
#include <windows.h>
static int64_t mono_ns(void)
{
    static LARGE_INTEGER f;
    LARGE_INTEGER c;
    if (f.QuadPart == 0) QueryPerformanceFrequency(&f);
    QueryPerformanceCounter(&c);
    return (int64_t)((double)c.QuadPart * 1e9 / (double)f.QuadPart);
}
#else
#include <time.h>
static int64_t mono_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define SPIN_PAUSE() __builtin_ia32_pause()
#elif defined(__aarch64__) && (defined(__GNUC__) || defined(__clang__))
#define SPIN_PAUSE() __asm__ __volatile__("yield")
#elif defined(_MSC_VER)
#define SPIN_PAUSE() YieldProcessor()
#else
#define SPIN_PAUSE() ((void)0)
#endif
#if defined(_WIN32)
#define YIELD_CPU() SwitchToThread()
#else
#include <sched.h>
#define YIELD_CPU() sched_yield()
#endif
#if defined(_MSC_VER) && !defined(__clang__)
#define LOAD64(p) (*(volatile long long *)(p))
#else
#define LOAD64(p) __atomic_load_n((p), __ATOMIC_ACQUIRE)
#endif

/* Claim jobs shared with polling helpers.  A pool helper that waits in spin_wait (below; the GIL released)
   also watches this slot: a *_claim call made with share=1 posts its chunk function here, so a polling
   helper claims chunks at once, in C, without taking the GIL (waking a helper or handing it the
   GIL costs tens of microseconds).  One job at a time (a second caller just runs its own chunks); the
   caller withdraws the job after its own loop and waits for the helpers still inside it, so the buffers the
   job points to outlive every use.  A helper counts itself in `takers` before it reads `posted` and the
   caller clears `posted` before it reads `takers` (both sequentially consistent): either the caller sees the
   helper and waits, or the helper sees the job withdrawn and leaves it. */
static int64_t g_spinners, g_owner, g_posted, g_takers, g_nparts;
static int64_t *g_counter;
static chunk_fn g_fn;
static void *g_ctx;

#if defined(_MSC_VER) && !defined(__clang__)
#define ATOM_LOAD(p) (*(volatile long long *)(p))
#define ATOM_STORE(p, v) (void)_InterlockedExchange64((volatile long long *)(p), (v))
#define ATOM_ADD(p, v) _InterlockedExchangeAdd64((volatile long long *)(p), (v))
#define ATOM_CAS(p, o, n) (_InterlockedCompareExchange64((volatile long long *)(p), (n), (o)) == (o))
#else
#define ATOM_LOAD(p) __atomic_load_n((p), __ATOMIC_SEQ_CST)
#define ATOM_STORE(p, v) __atomic_store_n((p), (v), __ATOMIC_SEQ_CST)
#define ATOM_ADD(p, v) __atomic_fetch_add((p), (v), __ATOMIC_SEQ_CST)
#define ATOM_CAS(p, o, n) __extension__({ int64_t e_ = (o); \
    __atomic_compare_exchange_n((p), &e_, (n), 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST); })
#endif

static void claim_loop(chunk_fn fn, void *ctx, int64_t *counter, int64_t nparts)
{
    for (;;) {
        int64_t k = CLAIM(counter);
        if (k < 0 || k >= nparts) break;
        fn(ctx, k);
    }
}

/* GIL released.  share: post the job first (unless another one is posted) for the polling helpers */
static void claim_run(chunk_fn fn, void *ctx, int64_t *counter, int64_t nparts, int share)
{
    int posted = 0;
    if (share && nparts > 1 && ATOM_CAS(&g_owner, 0, 1)) {
        g_fn = fn;
        g_ctx = ctx;
        g_counter = counter;
        g_nparts = nparts;
        ATOM_STORE(&g_posted, 1);
        posted = 1;
    }
    claim_loop(fn, ctx, counter, nparts);
    if (posted) {
        ATOM_STORE(&g_posted, 0);
        /* a helper finishing its last chunk; one descheduled (a competitor started) may be queued on this
           very core: yield to it now and then instead of only pausing */
        for (unsigned spins = 1; ATOM_LOAD(&g_takers) > 0; spins++) {
            if (spins % 256 == 0) YIELD_CPU();
            else SPIN_PAUSE();
        }
        ATOM_STORE(&g_owner, 0);
    }
}

/* a polling helper: run the posted job's remaining chunks, if there is one; 1 if it did */
static int claim_help(void)
{
    if (ATOM_LOAD(&g_posted) == 0) return 0;
    ATOM_ADD(&g_takers, 1);
    int ran = 0;
    if (ATOM_LOAD(&g_posted)) {
        claim_loop(g_fn, g_ctx, g_counter, g_nparts);
        ran = 1;
    }
    ATOM_ADD(&g_takers, -1);
    return ran;
}

struct sum_job { const float *x; Py_ssize_t n, chunk; double *parts; };

static void sum_chunk(void *ctx, int64_t k)
{
    struct sum_job *j = (struct sum_job *)ctx;
    Py_ssize_t lo = (Py_ssize_t)k * j->chunk, hi = j->n - lo < j->chunk ? j->n : lo + j->chunk;
    j->parts[k] = sum_f32_range(j->x + lo, hi - lo);
}

/* src, chunk, counter, parts[, share]: parts[k] = the lane sum (sum_f32) of chunk k, src[k * chunk : (k + 1) * chunk]
   of the float32 buffer src, for k = 0 .. ceil(n / chunk) - 1 (len(parts) of them), chunks claimed
   through counter (int64, 0 before the first call); share: offer the chunks to polling helpers (claim_run) */
static PyObject *sum_f32_claim(PyObject *self, PyObject *args)
{
    PyObject *ao, *co, *po;
    Py_ssize_t chunk;
    int share = 0;
    if (!PyArg_ParseTuple(args, "OnOO|p", &ao, &chunk, &co, &po, &share)) return NULL;
    if (chunk < 1) {
        PyErr_Format(PyExc_ValueError, "_kernels.sum_f32_claim: chunk %zd is invalid; expected >= 1", chunk);
        return NULL;
    }
    Py_buffer av, cv, pv;
    if (get_src(ao, &av, 4, 0, "sum_f32_claim", "src") < 0) return NULL;
    Py_ssize_t n = av.len / 4, nparts = n / chunk + (n % chunk != 0);
    if (get_w8(co, &cv, 1, "sum_f32_claim", "counter") < 0) { PyBuffer_Release(&av); return NULL; }
    if (get_w8(po, &pv, nparts, "sum_f32_claim", "parts") < 0) {
        PyBuffer_Release(&av);
        PyBuffer_Release(&cv);
        return NULL;
    }
    struct sum_job job = {(const float *)av.buf, n, chunk, (double *)pv.buf};
    Py_BEGIN_ALLOW_THREADS
    claim_run(sum_chunk, &job, (int64_t *)cv.buf, nparts, share);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&av);
    PyBuffer_Release(&cv);
    PyBuffer_Release(&pv);
    Py_RETURN_NONE;
}

struct rows_job { const float *x; Py_ssize_t rows, cols, chunk; float *out; };

static void rows_chunk(void *ctx, int64_t k)
{
    struct rows_job *j = (struct rows_job *)ctx;
    Py_ssize_t r0 = (Py_ssize_t)k * j->chunk, r1 = j->rows - r0 < j->chunk ? j->rows : r0 + j->chunk;
    rows_loop(j->x, j->rows, j->cols, j->out, r0, r1);
}

/* src, rows, cols, out, chunk, counter[, share]: out[r] = sum_rows_f32's row sums of the C-contiguous (rows, cols)
   float32 matrix src, the rows in chunks of `chunk` rows claimed through counter */
static PyObject *sum_rows_f32_claim(PyObject *self, PyObject *args)
{
    PyObject *ao, *oo, *co;
    Py_ssize_t rows, cols, chunk;
    int share = 0;
    if (!PyArg_ParseTuple(args, "OnnOnO|p", &ao, &rows, &cols, &oo, &chunk, &co, &share)) return NULL;
    if (rows < 0 || cols < 0 || chunk < 1 || (cols > 0 && rows > PY_SSIZE_T_MAX / cols)) {
        PyErr_Format(PyExc_ValueError, "_kernels.sum_rows_f32_claim: shape (%zd, %zd) / chunk %zd is invalid; "
                     "expected rows, cols >= 0 and chunk >= 1", rows, cols, chunk);
        return NULL;
    }
    Py_buffer av, ov, cv;
    if (get_src(ao, &av, 4, rows * cols, "sum_rows_f32_claim", "src") < 0) return NULL;
    if (get_out(oo, &ov, 4, rows, "sum_rows_f32_claim") < 0) { PyBuffer_Release(&av); return NULL; }
    if (get_w8(co, &cv, 1, "sum_rows_f32_claim", "counter") < 0) {
        PyBuffer_Release(&av);
        PyBuffer_Release(&ov);
        return NULL;
    }
    Py_ssize_t nparts = rows / chunk + (rows % chunk != 0);
    struct rows_job job = {(const float *)av.buf, rows, cols, chunk, (float *)ov.buf};
    Py_BEGIN_ALLOW_THREADS
    claim_run(rows_chunk, &job, (int64_t *)cv.buf, nparts, share);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&av);
    PyBuffer_Release(&ov);
    PyBuffer_Release(&cv);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------ */
/* Philox4x32-10 (Salmon et al., SC'11): the backend's random_bits stream    */
/* ------------------------------------------------------------------------ */
/* Block i has the counter (i mod 2^32, i >> 32, 0, 0) under the key (k0, k1);
   its four output words are words 4i .. 4i+3 of the stream.  The same rounds
   as the NumPy implementation in numpy_backend.py (Random123's known-answer
   vectors are tested against both). */
INLINE void philox_block(uint64_t i, uint32_t k0, uint32_t k1, uint32_t w[4])
{
    uint32_t c0 = (uint32_t)i, c1 = (uint32_t)(i >> 32), c2 = 0, c3 = 0;
    for (int r = 0; r < 10; r++) {
        if (r) { k0 += 0x9E3779B9u; k1 += 0xBB67AE85u; }
        uint64_t p0 = (uint64_t)c0 * 0xD2511F53u, p1 = (uint64_t)c2 * 0xCD9E8D57u;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c1 = (uint32_t)p1;
        c3 = (uint32_t)p0;
        c0 = n0;
        c2 = n2;
    }
    w[0] = c0; w[1] = c1; w[2] = c2; w[3] = c3;
}

#ifdef HAVE_F16C_PATH
/* 8 blocks per step in AVX2 registers: _mm256_mul_epu32 multiplies the even 32-bit
   lanes into 64-bit products, so each word takes two multiplies (even and odd lanes)
   and blends to split the products into their low and high halves; the four words of
   the 8 blocks are interleaved back into stream order with unpacks and lane permutes */
__attribute__((target("avx2"))) static Py_ssize_t philox_avx2(uint32_t k0, uint32_t k1, uint32_t *out,
                                                             Py_ssize_t w, Py_ssize_t w0, Py_ssize_t w1)
{
    const __m256i m0 = _mm256_set1_epi64x(0xD2511F53), m1 = _mm256_set1_epi64x(0xCD9E8D57);
    const __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    for (; w1 - w >= 32; w += 32) {  /* not w + 32 <= w1: w1 may be near PY_SSIZE_T_MAX */
        uint64_t first = (uint64_t)(w / 4);
        __m256i c0, c1;
        if ((first & 0xFFFFFFFFu) <= 0xFFFFFFFFu - 7u) {
            c0 = _mm256_add_epi32(_mm256_set1_epi32((int)(uint32_t)first), lane);
            c1 = _mm256_set1_epi32((int)(uint32_t)(first >> 32));
        } else {  /* the low word wraps inside these 8 blocks */
            uint32_t a[8], b[8];
            for (int j = 0; j < 8; j++) { a[j] = (uint32_t)(first + j); b[j] = (uint32_t)((first + j) >> 32); }
            c0 = _mm256_loadu_si256((const __m256i *)a);
            c1 = _mm256_loadu_si256((const __m256i *)b);
        }
        __m256i c2 = _mm256_setzero_si256(), c3 = _mm256_setzero_si256();
        uint32_t r0 = k0, r1 = k1;
        for (int r = 0; r < 10; r++) {
            if (r) { r0 += 0x9E3779B9u; r1 += 0xBB67AE85u; }
            __m256i pe0 = _mm256_mul_epu32(c0, m0), po0 = _mm256_mul_epu32(_mm256_srli_epi64(c0, 32), m0);
            __m256i pe1 = _mm256_mul_epu32(c2, m1), po1 = _mm256_mul_epu32(_mm256_srli_epi64(c2, 32), m1);
            __m256i lo0 = _mm256_blend_epi32(pe0, _mm256_slli_epi64(po0, 32), 0xAA);
            __m256i hi0 = _mm256_blend_epi32(_mm256_srli_epi64(pe0, 32), po0, 0xAA);
            __m256i lo1 = _mm256_blend_epi32(pe1, _mm256_slli_epi64(po1, 32), 0xAA);
            __m256i hi1 = _mm256_blend_epi32(_mm256_srli_epi64(pe1, 32), po1, 0xAA);
            __m256i n0 = _mm256_xor_si256(_mm256_xor_si256(hi1, c1), _mm256_set1_epi32((int)r0));
            __m256i n2 = _mm256_xor_si256(_mm256_xor_si256(hi0, c3), _mm256_set1_epi32((int)r1));
            c1 = lo1;
            c3 = lo0;
            c0 = n0;
            c2 = n2;
        }
        /* transpose: block j's words (c0[j], c1[j], c2[j], c3[j]) go to out[4j .. 4j+3] */
        __m256i t0 = _mm256_unpacklo_epi32(c0, c1), t1 = _mm256_unpackhi_epi32(c0, c1);
        __m256i t2 = _mm256_unpacklo_epi32(c2, c3), t3 = _mm256_unpackhi_epi32(c2, c3);
        __m256i u0 = _mm256_unpacklo_epi64(t0, t2), u1 = _mm256_unpackhi_epi64(t0, t2);
        __m256i u2 = _mm256_unpacklo_epi64(t1, t3), u3 = _mm256_unpackhi_epi64(t1, t3);
        uint32_t *o = out + (w - w0);
        _mm256_storeu_si256((__m256i *)o, _mm256_permute2x128_si256(u0, u1, 0x20));
        _mm256_storeu_si256((__m256i *)(o + 8), _mm256_permute2x128_si256(u2, u3, 0x20));
        _mm256_storeu_si256((__m256i *)(o + 16), _mm256_permute2x128_si256(u0, u1, 0x31));
        _mm256_storeu_si256((__m256i *)(o + 24), _mm256_permute2x128_si256(u2, u3, 0x31));
    }
    return w;
}
#endif

static int avx2_ok = 0;  /* set at import: the CPU runs the AVX2 Philox loop */

#define PHILOX_B 16

/* words [w0, w1) of the stream into out[0 .. w1 - w0) */
HOT static void philox_loop(uint32_t k0, uint32_t k1, uint32_t *out, Py_ssize_t w0, Py_ssize_t w1)
{
    Py_ssize_t w = w0;
    uint32_t blk[4];
    if (w % 4) {  /* a partial first block */
        philox_block((uint64_t)(w / 4), k0, k1, blk);
        for (; w % 4 && w < w1; w++) out[w - w0] = blk[w % 4];
    }
#ifdef HAVE_F16C_PATH
    if (avx2_ok && w % 4 == 0) w = philox_avx2(k0, k1, out, w, w0, w1);
#endif
    /* PHILOX_B blocks side by side: the rounds vectorise across blocks (32 x 32 -> 64-bit
       multiplies are SIMD instructions), where one block's rounds form a serial chain */
    for (; w1 - w >= 4 * PHILOX_B; w += 4 * PHILOX_B) {
        uint32_t c0[PHILOX_B], c1[PHILOX_B], c2[PHILOX_B], c3[PHILOX_B];
        uint64_t first = (uint64_t)(w / 4);
        for (int j = 0; j < PHILOX_B; j++) {
            c0[j] = (uint32_t)(first + (uint64_t)j);
            c1[j] = (uint32_t)((first + (uint64_t)j) >> 32);
            c2[j] = 0;
            c3[j] = 0;
        }
        uint32_t r0 = k0, r1 = k1;
        for (int r = 0; r < 10; r++) {
            if (r) { r0 += 0x9E3779B9u; r1 += 0xBB67AE85u; }
            for (int j = 0; j < PHILOX_B; j++) {
                uint64_t p0 = (uint64_t)c0[j] * 0xD2511F53u, p1 = (uint64_t)c2[j] * 0xCD9E8D57u;
                uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1[j] ^ r0, n2 = (uint32_t)(p0 >> 32) ^ c3[j] ^ r1;
                c1[j] = (uint32_t)p1;
                c3[j] = (uint32_t)p0;
                c0[j] = n0;
                c2[j] = n2;
            }
        }
        uint32_t *o = out + (w - w0);
        for (int j = 0; j < PHILOX_B; j++) {
            o[4 * j] = c0[j]; o[4 * j + 1] = c1[j]; o[4 * j + 2] = c2[j]; o[4 * j + 3] = c3[j];
        }
    }
    for (; w1 - w >= 4; w += 4) {
        philox_block((uint64_t)(w / 4), k0, k1, blk);
        out[w - w0] = blk[0]; out[w - w0 + 1] = blk[1]; out[w - w0 + 2] = blk[2]; out[w - w0 + 3] = blk[3];
    }
    if (w < w1) {  /* a partial last block */
        philox_block((uint64_t)(w / 4), k0, k1, blk);
        for (int j = 0; w < w1; w++, j++) out[w - w0] = blk[j];
    }
}

/* philox_stream(k0, k1, out, w0, w1): words w0 .. w1 - 1 of the stream under the key (k0, k1)
   into the uint32 buffer out[0 .. w1 - w0) */
/* a key word: a Python int in [0, 2**32) (the "K" format would wrap negative and huge ints) */
static int key_word(PyObject *o, uint32_t *k, const char *fn, const char *what)
{
    if (!PyIndex_Check(o)) {
        PyErr_Format(PyExc_TypeError, "_kernels.%s: %s must be an int, got %.100s", fn, what, Py_TYPE(o)->tp_name);
        return -1;
    }
    PyObject *i = PyNumber_Index(o);
    if (i == NULL) return -1;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(i, &overflow);
    Py_DECREF(i);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow || v < 0 || v > 0xFFFFFFFFll) {
        PyErr_Format(PyExc_ValueError, "_kernels.%s: %s %R is out of range; expected 0 <= %s < 2**32",
                     fn, what, o, what);
        return -1;
    }
    *k = (uint32_t)v;
    return 0;
}

static PyObject *philox_stream(PyObject *self, PyObject *args)
{
    PyObject *ko0, *ko1;
    uint32_t k0, k1;
    PyObject *oo;
    Py_ssize_t w0, w1;
    if (!PyArg_ParseTuple(args, "OOOnn", &ko0, &ko1, &oo, &w0, &w1))
        return NULL;
    if (key_word(ko0, &k0, "philox_stream", "k0") < 0 || key_word(ko1, &k1, "philox_stream", "k1") < 0 ||
        check_range("philox_stream", "word range", w0, w1) < 0)
        return NULL;
    Py_buffer ov;
    if (get_out(oo, &ov, 4, w1 - w0, "philox_stream") < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    philox_loop(k0, k1, (uint32_t *)ov.buf, w0, w1);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* uniform floats in [0, 1) from the stream, as the contract's random_uniform defines them:
   float32 value i = (word i >> 8) * 2^-24; float64 value i = ((word 2i >> 5) * 2^26 +
   (word 2i+1 >> 6)) * 2^-53 (every step exact) */
static void uniform_loop(uint32_t k0, uint32_t k1, int f64, void *out, Py_ssize_t i0, Py_ssize_t i1)
{
    uint32_t buf[1024];
    Py_ssize_t per = f64 ? 2 : 1, cap = 1024 / per;
    for (Py_ssize_t i = i0; i < i1;) {
        Py_ssize_t m = i1 - i < cap ? i1 - i : cap;
        philox_loop(k0, k1, buf, i * per, (i + m) * per);
        if (f64) {
            double *o = (double *)out + (i - i0);
            for (Py_ssize_t j = 0; j < m; j++)
                o[j] = ((double)(buf[2 * j] >> 5) * 67108864.0 + (double)(buf[2 * j + 1] >> 6)) *
                       1.1102230246251565e-16;
        } else {
            float *o = (float *)out + (i - i0);
            for (Py_ssize_t j = 0; j < m; j++) o[j] = (float)(buf[j] >> 8) * 5.9604644775390625e-08f;
        }
        i += m;
    }
}

/* philox_uniform(k0, k1, out, i0, i1, f64): uniform values i0 .. i1 - 1 into out[0 .. i1 - i0)
   (float64 when f64, else float32) */
static PyObject *philox_uniform(PyObject *self, PyObject *args)
{
    PyObject *ko0, *ko1;
    uint32_t k0, k1;
    PyObject *oo;
    Py_ssize_t i0, i1;
    int f64;
    if (!PyArg_ParseTuple(args, "OOOnnp", &ko0, &ko1, &oo, &i0, &i1, &f64))
        return NULL;
    if (key_word(ko0, &k0, "philox_uniform", "k0") < 0 || key_word(ko1, &k1, "philox_uniform", "k1") < 0 ||
        check_range("philox_uniform", "range", i0, i1) < 0)
        return NULL;
    if (i1 > PY_SSIZE_T_MAX / 2) {  /* a float64 value takes words 2i and 2i + 1 */
        PyErr_Format(PyExc_ValueError, "_kernels.philox_uniform: range end %zd is too large; expected at most %zd",
                     i1, PY_SSIZE_T_MAX / 2);
        return NULL;
    }
    Py_buffer ov;
    if (get_out(oo, &ov, f64 ? 8 : 4, i1 - i0, "philox_uniform") < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS
    uniform_loop(k0, k1, f64, ov.buf, i0, i1);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------ */
/* where: a branch-free select on the raw bits (any dtype of 1, 2, 4, 8 bytes) */
/* ------------------------------------------------------------------------ */
/* NumPy's where branches on every element (~5 ns each with a random condition);
   the mask select below vectorises.  A scalar operand (a 1-element buffer) is
   broadcast.  Pure selection: every dtype's bits come through unchanged. */
#define SEL_LOOPS(T)                                                                            \
    {                                                                                           \
        const T *px = (const T *)xv, *py = (const T *)yv;                                      \
        T *o = (T *)out, sx = px[0], sy = py[0];                                                \
        if (xs && ys) { for (Py_ssize_t i = lo; i < hi; i++) {                                  \
            T m = (T)0 - (T)(c[i] != 0); o[i] = (T)((sx & m) | (sy & (T)~m)); } }               \
        else if (xs) { for (Py_ssize_t i = lo; i < hi; i++) {                                   \
            T m = (T)0 - (T)(c[i] != 0); o[i] = (T)((sx & m) | (py[i] & (T)~m)); } }            \
        else if (ys) { for (Py_ssize_t i = lo; i < hi; i++) {                                   \
            T m = (T)0 - (T)(c[i] != 0); o[i] = (T)((px[i] & m) | (sy & (T)~m)); } }            \
        else { for (Py_ssize_t i = lo; i < hi; i++) {                                           \
            T m = (T)0 - (T)(c[i] != 0); o[i] = (T)((px[i] & m) | (py[i] & (T)~m)); } }         \
    }

HOT static void select_loop(int k, const uint8_t *c, const void *xv, int xs, const void *yv, int ys,
                            void *out, Py_ssize_t lo, Py_ssize_t hi)
{
    switch (k) {
    case 1: SEL_LOOPS(uint8_t) break;
    case 2: SEL_LOOPS(uint16_t) break;
    case 4: SEL_LOOPS(uint32_t) break;
    default: SEL_LOOPS(uint64_t) break;
    }
}

/* where_select(cond, x, y, out, lo, hi): out[i] = x[i] if cond[i] else y[i] for i in [lo, hi);
   cond: 1-byte items; x, y, out: items of one size (1, 2, 4 or 8 bytes); x or y of 1 item broadcasts */
static PyObject *where_select(PyObject *self, PyObject *args)
{
    PyObject *co, *xo, *yo, *oo;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OOOOnn", &co, &xo, &yo, &oo, &lo, &hi))
        return NULL;
    if (check_range("where_select", "range", lo, hi) < 0) return NULL;
    Py_buffer cv, xv, yv, ov;
    if (get_src(co, &cv, 1, hi, "where_select", "cond") < 0) return NULL;
    if (get_buf(xo, &xv, PyBUF_C_CONTIGUOUS, "where_select", "x") < 0) { PyBuffer_Release(&cv); return NULL; }
    if (get_buf(yo, &yv, PyBUF_C_CONTIGUOUS, "where_select", "y") < 0) {
        PyBuffer_Release(&cv); PyBuffer_Release(&xv); return NULL;
    }
    Py_ssize_t k = xv.itemsize;
    int xs = xv.len == k, ys = yv.len == k;
    const char *bad = NULL;
    if (k != 1 && k != 2 && k != 4 && k != 8) bad = "x's items must be 1, 2, 4 or 8 bytes";
    else if (yv.itemsize != k) bad = "x and y must have items of one size";
    else if (xv.len < k || (!xs && xv.len / k < hi)) bad = "x must hold 1 element (broadcast) or at least the range's end";
    else if (yv.len < k || (!ys && yv.len / k < hi)) bad = "y must hold 1 element (broadcast) or at least the range's end";
    if (bad) {
        PyBuffer_Release(&cv); PyBuffer_Release(&xv); PyBuffer_Release(&yv);
        PyErr_Format(PyExc_ValueError, "_kernels.where_select: %s (x: %zd bytes of %zd-byte items, y: %zd bytes "
                     "of %zd-byte items, range [%zd, %zd))", bad, xv.len, k, yv.len, yv.itemsize, lo, hi);
        return NULL;
    }
    if (get_out(oo, &ov, k, hi, "where_select") < 0) {
        PyBuffer_Release(&cv); PyBuffer_Release(&xv); PyBuffer_Release(&yv); return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    select_loop((int)k, (const uint8_t *)cv.buf, xv.buf, xs, yv.buf, ys, ov.buf, lo, hi);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&cv); PyBuffer_Release(&xv); PyBuffer_Release(&yv); PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------ */
/* blocked copy of a strided 2-d view (a transpose) into C order             */
/* ------------------------------------------------------------------------ */
/* Tiles of TB x TB (64: measured best of 16/32/64/128 here): the strided reads of a tile stay within TB cache lines
   and pages, the writes are contiguous runs.  Any strides (the exporter's),
   items of 1, 2, 4 or 8 bytes. */
#define TB 64
#define TCOPY(T)                                                                                \
    for (Py_ssize_t i0 = r0, i1; i0 < r1; i0 = i1) {                                           \
        i1 = r1 - i0 > TB ? i0 + TB : r1;                                                      \
        for (Py_ssize_t j0 = 0, j1; j0 < cols; j0 = j1) {                                      \
            j1 = cols - j0 > TB ? j0 + TB : cols;                                              \
            for (Py_ssize_t i = i0; i < i1; i++) {                                              \
                const char *row = src + i * s0;                                                 \
                T *o = (T *)out + i * cols;                                                     \
                for (Py_ssize_t j = j0; j < j1; j++) o[j] = *(const T *)(row + j * s1);        \
            }                                                                                   \
        }                                                                                       \
    }

HOT static void tcopy_loop(int k, const char *src, Py_ssize_t s0, Py_ssize_t s1, Py_ssize_t cols, void *out,
                           Py_ssize_t r0, Py_ssize_t r1)
{
    switch (k) {
    case 1: TCOPY(uint8_t) break;
    case 2: TCOPY(uint16_t) break;
    case 4: TCOPY(uint32_t) break;
    default: TCOPY(uint64_t) break;
    }
}

/* strided_copy(src, out, r0, r1): rows r0 .. r1 - 1 of the 2-d view src (any strides) into the
   C-contiguous out of the same shape and item size */
static PyObject *strided_copy(PyObject *self, PyObject *args)
{
    PyObject *so, *oo;
    Py_ssize_t r0, r1;
    if (!PyArg_ParseTuple(args, "OOnn", &so, &oo, &r0, &r1))
        return NULL;
    if (check_range("strided_copy", "row range", r0, r1) < 0) return NULL;
    Py_buffer sv, ov;
    if (get_buf(so, &sv, PyBUF_STRIDES, "strided_copy", "src") < 0) return NULL;
    Py_ssize_t k = sv.itemsize;
    if (sv.ndim != 2 || (k != 1 && k != 2 && k != 4 && k != 8) || r1 > sv.shape[0] ||
        sv.shape[0] < 0 || sv.shape[1] < 0) {
        PyErr_Format(PyExc_ValueError, "_kernels.strided_copy: expected a 2-d source of 1/2/4/8-byte items and "
                     "rows [r0, r1) within it, got a %d-d source of %zd-byte items and rows [%zd, %zd)",
                     sv.ndim, k, r0, r1);
        PyBuffer_Release(&sv);
        return NULL;
    }
    Py_ssize_t rows = sv.shape[0], cols = sv.shape[1];
    if (cols > 0 && rows > PY_SSIZE_T_MAX / k / cols) {  /* a zero-stride exporter may claim any shape */
        PyBuffer_Release(&sv);
        PyErr_Format(PyExc_ValueError, "_kernels.strided_copy: a (%zd, %zd) source of %zd-byte items has more "
                     "bytes than a buffer can hold", rows, cols, k);
        return NULL;
    }
    if (get_out(oo, &ov, k, rows * cols, "strided_copy") < 0) { PyBuffer_Release(&sv); return NULL; }
    if (cols == 0) r1 = r0;  /* nothing to copy (a 0-column source may claim any number of rows) */
    Py_BEGIN_ALLOW_THREADS
    tcopy_loop((int)k, (const char *)sv.buf, sv.strides[0], sv.strides[1], cols, ov.buf, r0, r1);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&sv);
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* ------------------------------------------------------------------------ */
/* round half away from zero (the seed's round), one pass                    */
/* ------------------------------------------------------------------------ */
/* trunc(x + copysign(largest value below 1/2, x)): the NumPy composite's three
   operations (each IEEE, round to nearest) in one pass, so the same bits. */
HOT static void round_f32_loop(const float *x, float *o, Py_ssize_t lo, Py_ssize_t hi)
{
    for (Py_ssize_t i = lo; i < hi; i++) o[i] = truncf(x[i] + copysignf(0.49999997f, x[i]));
}

HOT static void round_f64_loop(const double *x, double *o, Py_ssize_t lo, Py_ssize_t hi)
{
    for (Py_ssize_t i = lo; i < hi; i++) o[i] = trunc(x[i] + copysign(0.49999999999999994, x[i]));
}

/* round_half_away(x, out, lo, hi): float32 or float64 (by item size) */
static PyObject *round_half_away(PyObject *self, PyObject *args)
{
    PyObject *xo, *oo;
    Py_ssize_t lo, hi;
    if (!PyArg_ParseTuple(args, "OOnn", &xo, &oo, &lo, &hi))
        return NULL;
    if (check_range("round_half_away", "range", lo, hi) < 0) return NULL;
    Py_buffer xv, ov;
    if (get_buf(xo, &xv, PyBUF_C_CONTIGUOUS, "round_half_away", "x") < 0) return NULL;
    Py_ssize_t k = xv.itemsize;
    if (k != 4 && k != 8) {
        PyBuffer_Release(&xv);
        PyErr_Format(PyExc_ValueError, "_kernels.round_half_away: x has %zd-byte items; expected float32 (4) "
                     "or float64 (8)", k);
        return NULL;
    }
    if (xv.len / k < hi) {
        PyErr_Format(PyExc_ValueError, "_kernels.round_half_away: x holds %zd elements; expected at least %zd",
                     xv.len / k, hi);
        PyBuffer_Release(&xv);
        return NULL;
    }
    if (get_out(oo, &ov, k, hi, "round_half_away") < 0) { PyBuffer_Release(&xv); return NULL; }
    Py_BEGIN_ALLOW_THREADS
    if (k == 4) round_f32_loop((const float *)xv.buf, (float *)ov.buf, lo, hi);
    else round_f64_loop((const double *)xv.buf, (double *)ov.buf, lo, hi);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&xv);
    PyBuffer_Release(&ov);
    Py_RETURN_NONE;
}

/* set_simd(on) -> previous: switch the runtime-chosen AVX2 / F16C loops off (tests run the
   portable loops on machines that have both; turning them on where the CPU lacks them is refused) */
static PyObject *set_simd(PyObject *self, PyObject *args)
{
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    int prev = avx2_ok || f16c_ok || avx512_ok;
#ifdef HAVE_F16C_PATH
    if (on) {
        avx2_ok = __builtin_cpu_supports("avx2");
        f16c_ok = avx2_ok && __builtin_cpu_supports("f16c");
    } else {
        avx2_ok = 0;
        f16c_ok = 0;
    }
#endif
#ifdef HAVE_AVX512_PATH
    avx512_ok = on && rt512_supported();
#endif
    return PyBool_FromLong(prev);
}

/* set_avx512(on) -> previous: the AVX-512 loops on (where the CPU has them) or off (the AVX2 /
   portable loops run); for tests and measurements */
static PyObject *set_avx512(PyObject *self, PyObject *args)
{
    int on;
    if (!PyArg_ParseTuple(args, "p", &on)) return NULL;
    int prev = avx512_ok;
#ifdef HAVE_AVX512_PATH
    avx512_ok = on && rt512_supported();
#endif
    return PyBool_FromLong(prev);
}

/* spin_wait(flag, seen, ns) -> value: with the GIL released, polls the int64 flag[0] until it differs from
   seen or about ns nanoseconds have passed; returns the value last read.  The thread pool's helpers call it
   between operations while the cores are free, so a new operation (which bumps the flag) starts on a running
   helper instead of one the scheduler must wake (tens of microseconds on an idle core of a VM, more on a
   busy one).  While it polls it also runs the chunks of a shared claim job (claim_help).  Bounded: the
   caller blocks after it. */

static PyObject *spin_wait(PyObject *self, PyObject *args)
{
    PyObject *fo;
    long long seen, ns;
    if (!PyArg_ParseTuple(args, "OLL", &fo, &seen, &ns)) return NULL;
    if (ns < 0 || ns > 1000000000LL) {
        PyErr_Format(PyExc_ValueError, "_kernels.spin_wait: ns must be in [0, 1e9]; got %lld", ns);
        return NULL;
    }
    Py_buffer fv;
    if (get_w8(fo, &fv, 1, "spin_wait", "flag") < 0) return NULL;
    int64_t *flag = (int64_t *)fv.buf, v = seen;
    Py_BEGIN_ALLOW_THREADS
    ATOM_ADD(&g_spinners, 1);
    int64_t end = mono_ns() + ns;
    for (;;) {
        int i;
        for (i = 0; i < 64 && (v = LOAD64(flag)) == seen && !ATOM_LOAD(&g_posted); i++) SPIN_PAUSE();
        if (v != seen) break;
        if (claim_help()) end = mono_ns() + ns;  /* polled from the end of that job on */
        else if (mono_ns() >= end) break;
    }
    ATOM_ADD(&g_spinners, -1);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&fv);
    return PyLong_FromLongLong(v);
}

static PyObject *spinners(PyObject *self, PyObject *args)
{
    return PyLong_FromLongLong((long long)ATOM_LOAD(&g_spinners));
}

/* in a forked child: no helper polls there (the parent's threads do not exist), and no job is posted */
static PyObject *spin_reset(PyObject *self, PyObject *args)
{
    ATOM_STORE(&g_spinners, 0);
    ATOM_STORE(&g_posted, 0);
    ATOM_STORE(&g_takers, 0);
    ATOM_STORE(&g_owner, 0);
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"bf16_binary", bf16_binary, METH_VARARGS,
     "bf16_binary(op, a, b, out, lo, hi, mode): mode: NaN rule (add sub mul div) or tie rule (maximum minimum); out[lo:hi] = round(op(widen(a), widen(b))); a/b: bfloat16 buffers (1 element broadcasts) or float32-valued floats"},
    {"bf16_unary", bf16_unary, METH_VARARGS, "bf16_unary(op, a, out, lo, hi): square/sqrt of bfloat16"},
    {"bf16_to_float32", bf16_to_float32, METH_VARARGS, "bf16_to_float32(src, dst, lo, hi)"},
    {"float32_to_bf16", float32_to_bf16, METH_VARARGS, "float32_to_bf16(src, dst, lo, hi) (nearest even, NaN kept)"},
    {"f16_binary", f16_binary, METH_VARARGS,
     "f16_binary(op, a, b, out, lo, hi, rule): float16 a/b buffers (1 element broadcasts), NumPy's half loops' results"},
    {"f16_to_float32", f16_to_float32, METH_VARARGS, "f16_to_float32(src, dst, lo, hi)"},
    {"float32_to_f16", float32_to_f16, METH_VARARGS, "float32_to_f16(src, dst, lo, hi) (nearest even)"},
    {"f8_binary", f8_binary, METH_VARARGS,
     "f8_binary(fmt, op, a, b, out, lo, hi, mode): fmt 0: float8_e4m3fn, 1: float8_e5m2; as bf16_binary on 1-byte buffers"},
    {"f8_unary", f8_unary, METH_VARARGS, "f8_unary(fmt, op, a, out, lo, hi): square/sqrt of float8"},
    {"f8_to_float32", f8_to_float32, METH_VARARGS, "f8_to_float32(fmt, src, dst, lo, hi)"},
    {"float32_to_f8", float32_to_f8, METH_VARARGS, "float32_to_f8(fmt, src, dst, lo, hi) (nearest even, as ml_dtypes)"},
    {"philox_stream", philox_stream, METH_VARARGS,
     "philox_stream(k0, k1, out, w0, w1): words w0..w1-1 of the Philox4x32-10 stream into uint32 out[0:w1-w0]"},
    {"philox_uniform", philox_uniform, METH_VARARGS,
     "philox_uniform(k0, k1, out, i0, i1, f64): uniform values i0..i1-1 (float32, or float64 from word pairs)"},
    {"where_select", where_select, METH_VARARGS,
     "where_select(cond, x, y, out, lo, hi): branch-free out[i] = x[i] if cond[i] else y[i] (1-item x/y broadcast)"},
    {"strided_copy", strided_copy, METH_VARARGS,
     "strided_copy(src, out, r0, r1): rows r0..r1-1 of a strided 2-d view into C-contiguous out, in 32x32 tiles"},
    {"round_half_away", round_half_away, METH_VARARGS,
     "round_half_away(x, out, lo, hi): float32/float64 round half away from zero, NumPy composite's bits"},
    {"set_simd", set_simd, METH_VARARGS,
     "set_simd(on) -> previous: the AVX2 / F16C / AVX-512 loops on or off (for tests)"},
    {"set_avx512", set_avx512, METH_VARARGS, "set_avx512(on) -> previous: the AVX-512 loops on or off (for tests)"},
    {"lut16", lut16, METH_VARARGS,
     "lut16(a, table, out, lo, hi): out[i] = table[a[i]] (2-byte items, a 65536-entry table)"},
    {"sum_f32", sum_f32, METH_VARARGS, "sum_f32(src, lo, hi) -> float: sum of float32 src[lo:hi]"},
    {"sum_cols_f32", sum_cols_f32, METH_VARARGS, "sum_cols_f32(src, rows, cols, out, c0, c1)"},
    {"spin_wait", spin_wait, METH_VARARGS,
     "spin_wait(flag, seen, ns) -> value: poll int64 flag[0] (GIL released) until != seen or ns nanoseconds passed"},
    {"spinners", spinners, METH_NOARGS, "spinners() -> int: how many threads are polling in spin_wait now"},
    {"spin_reset", spin_reset, METH_NOARGS, "spin_reset(): no poller, no shared job (a forked child's state)"},
    {"sum_f32_claim", sum_f32_claim, METH_VARARGS,
     "sum_f32_claim(src, chunk, counter, parts[, share]): parts[k] = sum_f32 of chunk k, chunks claimed through "
     "counter (share: by polling helpers too)"},
    {"sum_rows_f32_claim", sum_rows_f32_claim, METH_VARARGS,
     "sum_rows_f32_claim(src, rows, cols, out, chunk, counter[, share]): sum_rows_f32 in row chunks claimed "
     "through counter (share: by polling helpers too)"},
    {"sum_rows_f32", sum_rows_f32, METH_VARARGS,
     "sum_rows_f32(src, rows, cols, out, r0, r1): out[r] = sum of row r (sum_f32's lanes, rounded once)"},
    {NULL, NULL, 0, NULL}
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT, "_kernels",
    "Optional compiled kernels of runetensor's NumPy backend (GIL released).", -1, methods
};

PyMODINIT_FUNC PyInit__kernels(void)
{
    PyObject *m = PyModule_Create(&moddef);
    if (m == NULL) return NULL;
#ifdef HAVE_F16C_PATH
    __builtin_cpu_init();
    f16c_ok = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c");
    avx2_ok = __builtin_cpu_supports("avx2");
#endif
#ifdef HAVE_AVX512_PATH
    avx512_ok = rt512_supported();
#endif
    if (PyModule_AddIntConstant(m, "OP_ADD", OP_ADD) < 0 || PyModule_AddIntConstant(m, "OP_SUB", OP_SUB) < 0 ||
        PyModule_AddIntConstant(m, "OP_MUL", OP_MUL) < 0 || PyModule_AddIntConstant(m, "OP_DIV", OP_DIV) < 0 ||
        PyModule_AddIntConstant(m, "OP_MAX", OP_MAX) < 0 || PyModule_AddIntConstant(m, "OP_MIN", OP_MIN) < 0 ||
        PyModule_AddIntConstant(m, "UOP_SQUARE", UOP_SQUARE) < 0 ||
        PyModule_AddIntConstant(m, "UOP_SQRT", UOP_SQRT) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
