/*
 * AVX-512 loops of runetensor._backend._kernels (declared in _kernels_avx512.h).
 *
 * Every function carries its own target attribute: the file is built with the module's
 * flags (no -march) and _kernels.c calls into it only where rt512_supported() says the CPU
 * has AVX-512 F/BW/VL/DQ.  Each loop gives the bits of the portable loop it stands in for
 * (same float32 operations in the same order; same rounding; same NaN rules), which the tests
 * check over every bfloat16 / float16 bit pattern.
 */
#include "_kernels_avx512.h"

#ifdef HAVE_AVX512_PATH
#include <immintrin.h>

#define T512 __attribute__((target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))
#define I512 static inline __attribute__((always_inline, target("avx512f,avx512bw,avx512vl,avx512dq,fma,f16c")))

int rt512_supported(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
           __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

/* the mask of the first m (< 16) lanes, or all 16 */
I512 __mmask16 lanes(ptrdiff_t m)
{
    return m >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << m) - 1u);
}

/* ------------------------------------------------------------------------ */
/* float32 sums                                                             */
/* ------------------------------------------------------------------------ */
I512 __m512d lo_pd(__m512 a) { return _mm512_cvtps_pd(_mm512_castps512_ps256(a)); }
I512 __m512d hi_pd(__m512 a)
{
    return _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}

/* lane_sum's order: lanes j = 0..31 (two registers) add the 16 rows of a block in float32, each
   block's lane sums go into 32 float64 lanes; then the partial block (1..15 rows of 32), the
   last n % 32 values in float64 in order, the pairwise tree over the lanes */
T512 double rt512_lane_sum(const float *x, ptrdiff_t n)
{
    __m512d d0 = _mm512_setzero_pd(), d1 = d0, d2 = d0, d3 = d0;
    ptrdiff_t i = 0;
    for (; n - i >= 512; i += 512) {
        const float *p = x + i;
        __m512 a0 = _mm512_loadu_ps(p), a1 = _mm512_loadu_ps(p + 16);
        for (int r = 1; r < 16; r++) {
            a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + 32 * r));
            a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + 32 * r + 16));
        }
        d0 = _mm512_add_pd(d0, lo_pd(a0));
        d1 = _mm512_add_pd(d1, hi_pd(a0));
        d2 = _mm512_add_pd(d2, lo_pd(a1));
        d3 = _mm512_add_pd(d3, hi_pd(a1));
    }
    if (n - i >= 32) {
        ptrdiff_t nr = (n - i) / 32;
        const float *p = x + i;
        __m512 a0 = _mm512_loadu_ps(p), a1 = _mm512_loadu_ps(p + 16);
        for (ptrdiff_t r = 1; r < nr; r++) {
            a0 = _mm512_add_ps(a0, _mm512_loadu_ps(p + 32 * r));
            a1 = _mm512_add_ps(a1, _mm512_loadu_ps(p + 32 * r + 16));
        }
        d0 = _mm512_add_pd(d0, lo_pd(a0));
        d1 = _mm512_add_pd(d1, hi_pd(a0));
        d2 = _mm512_add_pd(d2, lo_pd(a1));
        d3 = _mm512_add_pd(d3, hi_pd(a1));
        i += nr * 32;
    }
    double tail = 0.0;
    for (; i < n; i++) tail += (double)x[i];
    double t[32];
    _mm512_storeu_pd(t, d0);
    _mm512_storeu_pd(t + 8, d1);
    _mm512_storeu_pd(t + 16, d2);
    _mm512_storeu_pd(t + 24, d3);
    for (int w = 16; w >= 1; w /= 2)
        for (int j = 0; j < w; j++) t[j] += t[j + w];
    return t[0] + tail;
}

/* cols_loop's order: out[c] = 0 + row 0, then the rows added one after another (8 rows per
   pass over the columns) */
T512 void rt512_cols(const float *x, ptrdiff_t rows, ptrdiff_t cols, float *out, ptrdiff_t c0, ptrdiff_t c1)
{
    if (c0 >= c1) return;
    const __m512 zero = _mm512_setzero_ps();
    ptrdiff_t cend = c0 + (c1 - c0) / 16 * 16;
    __mmask16 tk = lanes(c1 - cend);
    for (ptrdiff_t c = c0; c < cend; c += 16)
        _mm512_storeu_ps(out + c, _mm512_add_ps(zero, _mm512_loadu_ps(x + c)));
    if (tk) _mm512_mask_storeu_ps(out + cend, tk, _mm512_add_ps(zero, _mm512_maskz_loadu_ps(tk, x + cend)));
    ptrdiff_t r = 1;
    for (; rows - r >= 8; r += 8) {
        const float *row = x + r * cols;
        for (ptrdiff_t c = c0; c < cend; c += 16) {
            __m512 a = _mm512_loadu_ps(out + c);
            for (int k = 0; k < 8; k++) a = _mm512_add_ps(a, _mm512_loadu_ps(row + k * cols + c));
            _mm512_storeu_ps(out + c, a);
        }
        if (tk) {
            __m512 a = _mm512_maskz_loadu_ps(tk, out + cend);
            for (int k = 0; k < 8; k++) a = _mm512_add_ps(a, _mm512_maskz_loadu_ps(tk, row + k * cols + cend));
            _mm512_mask_storeu_ps(out + cend, tk, a);
        }
    }
    for (; r < rows; r++) {
        const float *row = x + r * cols;
        for (ptrdiff_t c = c0; c < cend; c += 16)
            _mm512_storeu_ps(out + c, _mm512_add_ps(_mm512_loadu_ps(out + c), _mm512_loadu_ps(row + c)));
        if (tk)
            _mm512_mask_storeu_ps(out + cend, tk, _mm512_add_ps(_mm512_maskz_loadu_ps(tk, out + cend),
                                                                _mm512_maskz_loadu_ps(tk, row + cend)));
    }
}

/* ------------------------------------------------------------------------ */
/* bfloat16 and float16 arithmetic                                          */
/* ------------------------------------------------------------------------ */
/* 16 bfloat16 / float16 values (the first m of them; the others 0) as 32-bit lanes */
I512 __m512i load16(const uint16_t *p, __mmask16 k)
{
    return _mm512_cvtepu16_epi32(k == 0xffff ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(k, p));
}

I512 void store16(uint16_t *p, __mmask16 k, __m512i v)
{
    __m256i h = _mm512_cvtepi32_epi16(v);
    if (k == 0xffff)
        _mm256_storeu_si256((__m256i *)p, h);
    else
        _mm256_mask_storeu_epi16(p, k, h);
}

I512 __m512 bf16_widen(__m512i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16)); }

/* f32_to_bf16: nearest even on the bits; a NaN gives the quiet NaN of its sign */
I512 __m512i bf16_narrow(__m512 r)
{
    __m512i u = _mm512_castps_si512(r);
    __m512i hi = _mm512_srli_epi32(u, 16);
    __m512i v = _mm512_srli_epi32(_mm512_add_epi32(_mm512_add_epi32(u, _mm512_set1_epi32(0x7fff)),
                                                   _mm512_and_si512(hi, _mm512_set1_epi32(1))), 16);
    __mmask16 nan = _mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q);
    if (nan)
        v = _mm512_mask_mov_epi32(v, nan, _mm512_or_si512(_mm512_and_si512(hi, _mm512_set1_epi32(0x8000)),
                                                          _mm512_set1_epi32(0x7fc0)));
    return v;
}

/* nan_fix's choice, per lane: where an operand is a NaN, the result is that operand; where both
   are, bit (2 * quiet(a) + quiet(b)) of rule set picks a; qa / qb: the operands' quiet bits */
I512 __mmask16 pick_a(__mmask16 an, __mmask16 bn, __mmask16 qa, __mmask16 qb, int rule)
{
    unsigned pref = 0;
    if (rule & 1) pref |= ~(unsigned)qa & ~(unsigned)qb;
    if (rule & 2) pref |= ~(unsigned)qa & qb;
    if (rule & 4) pref |= qa & ~(unsigned)qb;
    if (rule & 8) pref |= (unsigned)qa & qb;
    return (__mmask16)(an & (~(unsigned)bn | pref));
}

I512 __m512 arith(int opc, __m512 a, __m512 b)
{
    switch (opc) {
    case 0: return _mm512_add_ps(a, b);
    case 1: return _mm512_sub_ps(a, b);
    case 2: return _mm512_mul_ps(a, b);
    default: return _mm512_div_ps(a, b);
    }
}

/* the block of 16 at i (k: the lanes in range); a broadcast operand's pointer is not offset */
I512 void bf16_block(int opc, int rule, const uint16_t *pa, __m512 va, int as_, const uint16_t *pb, __m512 vb,
                     int bs_, uint16_t *out, ptrdiff_t i, __mmask16 k)
{
    __m512 a = as_ ? va : bf16_widen(load16(pa + i, k));
    __m512 b = bs_ ? vb : bf16_widen(load16(pb + i, k));
    out += i;
    __m512 r = arith(opc, a, b);
    if (_mm512_cmp_ps_mask(r, r, _CMP_UNORD_Q) & k) {
        __mmask16 an = _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), bn = _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
        const __m512i q = _mm512_set1_epi32(0x400000);
        __m512i ua = _mm512_castps_si512(a), ub = _mm512_castps_si512(b);
        __mmask16 pa_ = pick_a(an, bn, _mm512_test_epi32_mask(ua, q), _mm512_test_epi32_mask(ub, q), rule);
        __mmask16 pb_ = (__mmask16)(bn & ~(unsigned)pa_);
        __m512i ur = _mm512_mask_mov_epi32(_mm512_castps_si512(r), pa_, _mm512_or_si512(ua, q));
        r = _mm512_castsi512_ps(_mm512_mask_mov_epi32(ur, pb_, _mm512_or_si512(ub, q)));
    }
    store16(out, k, bf16_narrow(r));
}

T512 void rt512_bf16_arith(int opc, int rule, const uint16_t *pa, float sa, int as_,
                           const uint16_t *pb, float sb, int bs_, uint16_t *out, ptrdiff_t lo, ptrdiff_t hi)
{
    __m512 va = _mm512_set1_ps(sa), vb = _mm512_set1_ps(sb);
    ptrdiff_t i = lo;
    /* one loop per op, so that the op is not chosen per block */
#define BF16_LOOP(OPC)                                                                          \
    for (; hi - i >= 16; i += 16)                                                               \
        bf16_block(OPC, rule, pa, va, as_, pb, vb, bs_, out, i, 0xffff);
    switch (opc) {
    case 0: BF16_LOOP(0) break;
    case 1: BF16_LOOP(1) break;
    case 2: BF16_LOOP(2) break;
    default: BF16_LOOP(3) break;
    }
#undef BF16_LOOP
    if (i < hi) bf16_block(opc, rule, pa, va, as_, pb, vb, bs_, out, i, lanes(hi - i));
}

/* float16: widened by the conversion instruction (exact; it quiets a signalling NaN, but NaN
   lanes are redone from the bits), one float32 op, rounded to nearest even by the instruction
   (overflow to inf, gradual underflow); a NaN operand gives its own bits, quieted (h | 0x200),
   by nan_fix's rule; a NaN made from non-NaN operands is the instruction's (the default NaN's
   sign | 0x7e00, as f32_to_f16) */
I512 __m256i load_h(const uint16_t *p, __mmask16 k)
{
    return k == 0xffff ? _mm256_loadu_si256((const __m256i *)p) : _mm256_maskz_loadu_epi16(k, p);
}

I512 void f16_block(int opc, int rule, const uint16_t *pa, __m256i ha0, int as_, const uint16_t *pb, __m256i hb0,
                    int bs_, uint16_t *out, ptrdiff_t i, __mmask16 k)
{
    __m256i ha = as_ ? ha0 : load_h(pa + i, k);
    __m256i hb = bs_ ? hb0 : load_h(pb + i, k);
    out += i;
    __m512 a = _mm512_cvtph_ps(ha), b = _mm512_cvtph_ps(hb);
    __m512 r = arith(opc, a, b);
    __m256i h = _mm512_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __mmask16 an = _mm512_cmp_ps_mask(a, a, _CMP_UNORD_Q), bn = _mm512_cmp_ps_mask(b, b, _CMP_UNORD_Q);
    if ((an | bn) & k) {
        const __m512i q = _mm512_set1_epi32(0x200);
        __m512i wa = _mm512_cvtepu16_epi32(ha), wb = _mm512_cvtepu16_epi32(hb);
        __mmask16 pa_ = pick_a(an, bn, _mm512_test_epi32_mask(wa, q), _mm512_test_epi32_mask(wb, q), rule);
        __mmask16 pb_ = (__mmask16)(bn & ~(unsigned)pa_);
        __m512i v = _mm512_cvtepu16_epi32(h);
        v = _mm512_mask_mov_epi32(v, pa_, _mm512_or_si512(wa, q));
        v = _mm512_mask_mov_epi32(v, pb_, _mm512_or_si512(wb, q));
        h = _mm512_cvtepi32_epi16(v);
    }
    if (k == 0xffff)
        _mm256_storeu_si256((__m256i *)out, h);
    else
        _mm256_mask_storeu_epi16(out, k, h);
}

T512 void rt512_f16_arith(int opc, int rule, const uint16_t *pa, uint16_t ra, int as_,
                          const uint16_t *pb, uint16_t rb, int bs_, uint16_t *out, ptrdiff_t lo, ptrdiff_t hi)
{
    __m256i ha = _mm256_set1_epi16((short)ra), hb = _mm256_set1_epi16((short)rb);
    ptrdiff_t i = lo;
#define F16_LOOP(OPC)                                                                           \
    for (; hi - i >= 16; i += 16)                                                               \
        f16_block(OPC, rule, pa, ha, as_, pb, hb, bs_, out, i, 0xffff);
    switch (opc) {
    case 0: F16_LOOP(0) break;
    case 1: F16_LOOP(1) break;
    case 2: F16_LOOP(2) break;
    default: F16_LOOP(3) break;
    }
#undef F16_LOOP
    if (i < hi) f16_block(opc, rule, pa, ha, as_, pb, hb, bs_, out, i, lanes(hi - i));
}

#endif
