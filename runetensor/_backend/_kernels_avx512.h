/*
 * AVX-512 versions of some loops of runetensor._backend._kernels (_kernels_avx512.c).
 *
 * Compiled with per-function target attributes (no -march), so the module still loads and
 * runs its portable loops on any x86-64 CPU; _kernels.c calls these only when the CPU has
 * AVX-512 F/BW/VL/DQ (checked at import with __builtin_cpu_supports).  Each gives the bits of
 * the loop it replaces (see there); the tests compare both.
 */
#ifndef RT_KERNELS_AVX512_H
#define RT_KERNELS_AVX512_H

#include <stddef.h>
#include <stdint.h>

#if defined(__x86_64__) && \
    ((defined(__clang__) && __clang_major__ >= 8) || (!defined(__clang__) && defined(__GNUC__) && __GNUC__ >= 8))
#define HAVE_AVX512_PATH 1

/* does the CPU (and the OS: the zmm state) run the loops below? */
int rt512_supported(void);

/* _kernels.c's lane_sum: the same order, so the same bits */
double rt512_lane_sum(const float *x, ptrdiff_t n);

/* _kernels.c's cols_loop: out[c] for c in [c0, c1) = column c summed row after row in float32 */
void rt512_cols(const float *x, ptrdiff_t rows, ptrdiff_t cols, float *out, ptrdiff_t c0, ptrdiff_t c1);

/* bfloat16 add / sub / mul / div (opc 0..3, _kernels.c's OP_ numbering) over [lo, hi):
   widen, float32 op, the NaN rule of nan_fix, round to nearest even (NaN: quiet, sign kept);
   as_ / bs_: the operand is the float32 scalar sa / sb.  Not both scalars. */
void rt512_bf16_arith(int opc, int rule, const uint16_t *pa, float sa, int as_,
                      const uint16_t *pb, float sb, int bs_, uint16_t *out, ptrdiff_t lo, ptrdiff_t hi);

/* float16 add / sub / mul / div: NumPy's half loops' bits (as h_loop); ra / rb: the raw bits
   of a broadcast operand.  Not both broadcast. */
void rt512_f16_arith(int opc, int rule, const uint16_t *pa, uint16_t ra, int as_,
                     const uint16_t *pb, uint16_t rb, int bs_, uint16_t *out, ptrdiff_t lo, ptrdiff_t hi);
#endif

#endif
