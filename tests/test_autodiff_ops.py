"""Automatic differentiation, part 2: movement and view ops, indexing, writes made functional,
products (matmul, dot, tensordot, einsum), complex numbers (JAX's convention) and JAX as an
oracle (optional).  Helpers: tests/test_autodiff.py."""
from __future__ import annotations

import numpy as np
import pytest

import runetensor as rt
from runetensor._tensor import unary_op

from test_autodiff import N, T, check_rule, cotangent_like, fixed

I64 = rt.int64


def idx(a):
    return T(a, dtype=I64)


# ---------------------------------------------------------------------------
# movement and view ops
# ---------------------------------------------------------------------------
MOVEMENT = {
    "reshape": lambda a: rt.reshape(a, [4, 6]) * 1.5,
    "reshape_noncontig": lambda a: rt.reshape(rt.contiguous(rt.transpose(a)), [24]),
    "transpose": lambda a: rt.transpose(a, [1, 2, 0]),
    "T": lambda a: a.T,
    "moveaxis": lambda a: rt.moveaxis(a, 0, -1),
    "swapaxes": lambda a: rt.swapaxes(a, 0, 2),
    "expand": lambda a: rt.expand(rt.reshape(a, [2, 1, 3, 4]), [2, 3, 3, 4]),
    "broadcast_to": lambda a: rt.broadcast_to(a[:, :1, :], [5, 2, 3, 4]),
    "slice_basic": lambda a: a[1, 1:3],
    "slice_neg_steps": lambda a: a[::-1, ::-2, 3:0:-2],
    "slice_ellipsis_none": lambda a: a[..., None, 1],
    "rt_slice": lambda a: rt.shrink(a, [(0, 1), (1, 3), (0, 4)]),
    "flip": lambda a: rt.flip(a, [1]),
    "flip_all": lambda a: rt.flip(a),
    "as_strided": lambda a: rt.as_strided(a, [4, 3], [5, 2], 1),
    "as_strided_overlap": lambda a: rt.as_strided(a, [5, 3], [2, 1], 0),
    "squeeze": lambda a: rt.squeeze(a[:1], 0),
    "expand_dims": lambda a: rt.expand_dims(a, [0, 3]),
    "unsqueeze_flatten": lambda a: rt.flatten(rt.unsqueeze(a, 1), 0, 2),
    "ravel": lambda a: rt.ravel(a[:, ::2]),
    "concatenate": lambda a: rt.concatenate([a, a[:, ::-1] * 2.0, a[:, :1]], axis=1),
    "concatenate_flat": lambda a: rt.concatenate([a, a[0]], axis=None),
    "stack": lambda a: rt.stack([a[0], a[1] * 3.0, a[1]], axis=2),
    "hstack_vstack": lambda a: rt.vstack([rt.hstack([a[0], a[1]]), rt.hstack([a[1, :, ::-1] * 2.0, a[0]])]),
    "split": lambda a: tuple(rt.split(a, 2, axis=2)),
    "split_sections": lambda a: tuple(rt.split(a, [1, 2], axis=1)),
    "array_split": lambda a: tuple(rt.array_split(a, 3, axis=2)),
    "pad": lambda a: rt.pad(a, [(1, 2), (0, 1), (2, 0)], 0.5),
    "roll": lambda a: rt.roll(a, 2, axis=2),
    "roll_flat": lambda a: rt.roll(a, -5),
    "roll_multi": lambda a: rt.roll(a, [1, 1], axis=[0, 1]),
    "tile": lambda a: rt.tile(a, [2, 1, 2]),
    "tile_more_dims": lambda a: rt.tile(a[0], [2, 1, 1]),
    "repeat": lambda a: rt.repeat(a, 3, axis=2),
    "repeat_flat": lambda a: rt.repeat(a[0], 2),
    "tril_triu": lambda a: rt.tril(a[0, :, :3]) + rt.triu(a[1, :, 1:], 1),
    "diagonal": lambda a: rt.diagonal(a, 1, 1, 2),
    "copy_contiguous": lambda a: rt.contiguous(a.T) + rt.copy(a).T,
}


@pytest.mark.parametrize("name", sorted(MOVEMENT))
def test_movement(name):
    x = T(fixed((2, 3, 4), 7))
    check_rule(MOVEMENT[name], x, order=1)


@pytest.mark.parametrize("name", ["reshape", "slice_neg_steps", "concatenate", "pad", "roll", "tile", "stack",
                                  "as_strided_overlap"])
def test_movement_second_order(name):
    x = T(fixed((2, 3, 4), 7, 0.5, 1.5))
    f = MOVEMENT[name]
    rt.check_grads(lambda a: rt.tree_leaves(f(a * a))[0], (x,), order=2)


def test_pad_value_differentiable():
    # the pad value, as a 0-d tensor, gets the sum of the cotangent over the border
    x = T(fixed((2, 3), 1))
    v = T(0.75)
    check_rule(lambda a, c: rt.pad(a, [(1, 1), (0, 2)], c), x, v, order=1)


def test_as_strided_of_strided_views():
    # the input may be any strided view without repeated elements (transposed, stepped)
    x = T(fixed((3, 4), 1))
    check_rule(lambda a: rt.as_strided(a.T, [3, 2], [1, 3], 1), x, order=1)
    check_rule(lambda a: rt.as_strided(a[::-1, ::2], [2, 2], [2, 4], 0), x, order=1)
    with pytest.raises(TypeError, match="as_strided"):  # reads an element that is not a[:, ::2]'s
        rt.grad(lambda a: rt.sum(rt.as_strided(a[:, ::2], [2], [1], 0)))(x)


def test_views_share_memory_and_gradient_accumulates():
    x = T(fixed((4,), 1))
    # the same element read through two views: contributions add
    g = rt.grad(lambda a: rt.sum(a[1:] * T([1.0, 2.0, 3.0])) + rt.sum(a[::-1] * T([10.0, 20.0, 30.0, 40.0])))(x)
    np.testing.assert_allclose(N(g), [40.0, 31.0, 22.0, 13.0])


# ---------------------------------------------------------------------------
# indexing
# ---------------------------------------------------------------------------
INDEXING = {
    "int": lambda a: a[1],
    "int_neg": lambda a: a[-1, -2],
    "fancy": lambda a: a[idx([2, 0, 2])],
    "fancy_dup_2d": lambda a: a[idx([[0, 1], [1, 1]]), idx([3, 3])],
    "fancy_mixed": lambda a: a[idx([1, 0, 1]), 1:3],
    "fancy_after_slice": lambda a: a[::-1][:, idx([0, 0, 3])],
    "mask": lambda a: a[T(fixed((3, 4), 2) > 0.6, dtype=rt.bool)],
    "mask_rows": lambda a: a[T([True, False, True], dtype=rt.bool)],
    "mask_derived": lambda a: a[a > 0.4],
    "take_flat": lambda a: rt.take(a, idx([11, 0, 5, 5])),
    "take_axis": lambda a: rt.take(a, idx([3, 1, 1]), axis=1),
    "take_wrap": lambda a: rt.take(a, idx([-1, 5, 2]), axis=1, mode="wrap"),
    "take_along_axis": lambda a: rt.take_along_axis(a, idx([[0, 3, 3], [1, 1, 1], [2, 0, 1]]), axis=1),
    "take_along_axis0": lambda a: rt.take_along_axis(a, idx([[2, 2, 0, 1]]), axis=0),
    "compress_extract": lambda a: rt.concatenate([
        rt.ravel(rt.compress(a, T([True, False, True, True], dtype=rt.bool), axis=1)), rt.extract(a, a > 0.3)]),
}


@pytest.mark.parametrize("name", sorted(INDEXING))
def test_indexing(name):
    x = T(fixed((3, 4), 8))
    check_rule(INDEXING[name], x, order=1)


def test_fancy_duplicates_accumulate():
    x = T([1.0, 2.0, 3.0])
    g = rt.grad(lambda a: rt.sum(a[idx([0, 2, 0, 0])] * T([1.0, 10.0, 100.0, 1000.0])))(x)
    np.testing.assert_array_equal(N(g), [1101.0, 0.0, 10.0])
    rt.check_grads(lambda a: a[idx([0, 2, 0, 0])] ** 2.0, (x,), order=2)


# ---------------------------------------------------------------------------
# writes into tensors created inside the function (made functional)
# ---------------------------------------------------------------------------
def _setitem_slice(a):
    z = rt.zeros(rt.float64, [3, 6])
    z[:, 1:5] = a * 2.0
    return z * z


def _setitem_slice_ref(a):
    return rt.pad(a * 2.0, [(0, 0), (1, 1)], 0.0) ** 2.0


def _setitem_overwrite(a):
    z = a * 3.0           # derived from a, created inside: writable
    z[1] = a[0] * a[2]    # overwrites row 1: its old dependence on a disappears
    z[:, 0] = 7.0
    return z


def _setitem_overwrite_ref(a):
    z = a * 3.0
    row = a[0] * a[2]
    z = rt.concatenate([z[:1], row[None], z[2:]], axis=0)
    return rt.concatenate([rt.full(rt.float64, [3, 1], 7.0), z[:, 1:]], axis=1)


def _iadd_view(a):
    z = rt.ones(rt.float64, [3, 4]) * 0.5
    v = z[:, ::2]          # a view created before the write, read after it
    z[:, ::2] += a[:, :2] * a[:, 2:]
    z += a
    return v * z[:, 1::2]


def _iadd_view_ref(a):
    cols = a[:, :2] * a[:, 2:] + 0.5
    z = rt.stack([cols[:, 0], rt.full(rt.float64, [3], 0.5), cols[:, 1], rt.full(rt.float64, [3], 0.5)], axis=1) + a
    return z[:, ::2] * z[:, 1::2]


def _blit(a):
    z = rt.empty(rt.float64, [3, 4])
    rt.blit(rt.sin(a), z)
    rt.blit(a[0] * 2.0, z[2])
    return z * a


def _blit_ref(a):
    s = rt.sin(a)
    return rt.concatenate([s[:2], (a[0] * 2.0)[None]], axis=0) * a


def _put(a):
    z = rt.zeros(rt.float64, [10])
    rt.put(z, idx([1, 4, 7, 8]), a[0] * a[1])
    rt.put(z, idx([4]), a[2, :1])  # overwrite: last write wins
    return z


def _put_ref(a):
    p = a[0] * a[1]
    zero = rt.zeros(rt.float64, [1])
    return rt.concatenate([zero, p[:1], zero, zero, a[2, :1], zero, zero, p[2:4], zero])


def _index_put(a):
    z = rt.zeros(rt.float64, [3, 3])
    rt.index_put(z, [idx([0, 2, 1]), idx([1, 0, 2])], a[0, :3] * 2.0)
    return z + 1.0


def _index_put_ref(a):
    v = a[0, :3] * 2.0
    zero = rt.zeros(rt.float64, [1])
    return rt.reshape(rt.concatenate([zero, v[:1], zero, zero, zero, v[2:3], v[1:2], zero, zero]), [3, 3]) + 1.0


def _put_along(a):
    z = rt.zeros(rt.float64, [3, 4])
    rt.put_along_axis(z, idx([[3], [0], [2]]), a[:, 1:2], axis=1)
    return z * 2.0


def _put_along_ref(a):
    c = a[:, 1]
    zero = rt.zeros(rt.float64, [1])
    rows = [rt.concatenate([zero, zero, zero, c[:1]]), rt.concatenate([c[1:2], zero, zero, zero]),
            rt.concatenate([zero, zero, c[2:3], zero])]
    return rt.stack(rows) * 2.0


def _setitem_fancy_mask(a):
    z = rt.zeros(rt.float64, [3, 4])
    z[idx([2, 0])] = a[:2] * 3.0
    z[T([[True, False, False, False]] * 3, dtype=rt.bool)] = a[:, 3]
    return z


def _setitem_fancy_mask_ref(a):
    r = [a[1] * 3.0, rt.zeros(rt.float64, [4]), a[0] * 3.0]
    m = rt.stack(r)
    return rt.concatenate([a[:, 3:4], m[:, 1:]], axis=1)


WRITES = {"setitem_slice": (_setitem_slice, _setitem_slice_ref),
          "setitem_overwrite": (_setitem_overwrite, _setitem_overwrite_ref),
          "iadd_view": (_iadd_view, _iadd_view_ref),
          "blit": (_blit, _blit_ref),
          "put": (_put, _put_ref),
          "index_put": (_index_put, _index_put_ref),
          "put_along_axis": (_put_along, _put_along_ref),
          "setitem_fancy_mask": (_setitem_fancy_mask, _setitem_fancy_mask_ref)}


@pytest.mark.parametrize("name", sorted(WRITES))
def test_write_into_fresh_tensor_matches_functional(name):
    f, ref = WRITES[name]
    x = T(fixed((3, 4), 4, 0.5, 1.5))
    np.testing.assert_allclose(N(f(x)), N(ref(x)), rtol=1e-14)
    ct = cotangent_like(f(x), 5)
    g = rt.vjp(f, x)[1](ct)[0]
    g_ref = rt.vjp(ref, x)[1](ct)[0]
    np.testing.assert_allclose(N(g), N(g_ref), rtol=1e-12, atol=1e-12)
    v = T(fixed((3, 4), 6))
    np.testing.assert_allclose(N(rt.jvp(f, (x,), (v,))[1]), N(rt.jvp(ref, (x,), (v,))[1]), rtol=1e-12, atol=1e-12)
    check_rule(f, x, order=2 if name in ("setitem_slice", "iadd_view", "blit") else 1)


def test_whole_buffer_out_write_gives_old_value_no_cotangent():
    """``out=`` into a whole fresh result (``mean`` divides its sum in place) overwrites every element:
    the old value gets no cotangent (none is computed), while values read before the write keep
    theirs; checked against central differences."""
    def f(a):
        s = rt.sum(a * a, [1])
        return rt.mean(a * a, [1]) * rt.sum(s) + rt.mean(a, [0]) @ a[0]
    check_rule(f, T(fixed((3, 4), 4, 0.5, 1.5)), order=2)

    def g(a):
        s = rt.sum(a * a, [1])
        u = s * 3.0                     # reads s before the write
        s[...] = a[:, 1] * 2.0          # a whole overwrite through a view: the view path
        return u * s
    check_rule(g, T(fixed((3, 4), 5, 0.5, 1.5)), order=1)


def test_write_constant_into_fresh_buffer_keeps_old_reads():
    # a value read before a write keeps its derivative (copy-on-write of held buffers)
    def f(a):
        z = a * 2.0
        s = rt.sum(z * z)   # uses z's old values
        z[0] = 0.0
        return s + rt.sum(z)
    x = T([1.0, 2.0, 3.0])
    g = rt.grad(f)(x)
    np.testing.assert_allclose(N(g), 8.0 * N(x) + np.array([0.0, 2.0, 2.0]))


# ---------------------------------------------------------------------------
# products
# ---------------------------------------------------------------------------
PRODUCTS = {
    "matmul_2d": (lambda a, b: rt.matmul(a, b), (3, 4), (4, 2)),
    "matmul_batched_bcast": (lambda a, b: rt.matmul(a, b), (2, 3, 4), (4, 5)),
    "matmul_bcast_both": (lambda a, b: rt.matmul(a, b), (2, 1, 3, 4), (3, 4, 2)),
    "matmul_vec_mat": (lambda a, b: rt.matmul(a, b), (4,), (2, 4, 3)),
    "matmul_mat_vec": (lambda a, b: rt.matmul(a, b), (2, 3, 4), (4,)),
    "matmul_vec_vec": (lambda a, b: rt.matmul(a, b), (4,), (4,)),
    "matmul_operator": (lambda a, b: (a @ b.T) * 2.0, (3, 4), (2, 4)),
    "dot": (lambda a, b: rt.dot(a, b), (3, 4), (4,)),
    "dot_nd": (lambda a, b: rt.dot(a, b), (2, 3, 4), (4, 2)),
    "tensordot_int": (lambda a, b: rt.tensordot(a, b, 2), (2, 3, 4), (3, 4, 2)),
    "tensordot_axes": (lambda a, b: rt.tensordot(a, b, ([0, 2], [2, 0])), (2, 3, 4), (4, 5, 2)),
    "einsum_matmul": (lambda a, b: rt.einsum("ij,jk->ik", a, b), (3, 4), (4, 2)),
    "einsum_batch": (lambda a, b: rt.einsum("bij,bjk->bik", a, b), (2, 3, 4), (2, 4, 3)),
    "einsum_outer": (lambda a, b: rt.einsum("i,j->ij", a, b), (3,), (4,)),
    "einsum_reduce_both": (lambda a, b: rt.einsum("ij,kj->", a, b), (3, 4), (2, 4)),
    "einsum_ellipsis": (lambda a, b: rt.einsum("...ij,jk->...ki", a, b), (2, 3, 4), (4, 2)),
    "einsum_trace": (lambda a, b: rt.einsum("ii,i->i", a, b), (3, 3), (3,)),
    "einsum_implicit_sum": (lambda a, b: rt.einsum("ijk,k->i", a, b), (2, 3, 4), (4,)),
    "einsum_bcast_1": (lambda a, b: rt.einsum("ij,ij->ij", a, b), (1, 4), (3, 4)),
    "inner_outer_vdot": (lambda a, b: rt.outer(rt.inner(a, b), a[0]) + rt.vdot(a, a), (2, 4), (3, 4)),
    "kron": (lambda a, b: rt.kron(a, b), (2, 2), (3, 2)),
    "trace": (lambda a, b: rt.trace(rt.matmul(a, b)), (3, 4), (4, 3)),
}


@pytest.mark.parametrize("name", sorted(PRODUCTS))
def test_products(name):
    f, sa, sb = PRODUCTS[name]
    check_rule(f, T(fixed(sa, 1)), T(fixed(sb, 2)), order=2)


def test_einsum_three_operands():
    a, b, c = T(fixed((2, 3), 1)), T(fixed((3, 4), 2)), T(fixed((4,), 3))
    check_rule(lambda x, y, z: rt.einsum("ij,jk,k->i", x, y, z), a, b, c, order=1)


def test_einsum_same_operand_twice():
    a = T(fixed((3, 3), 1))
    check_rule(lambda x: rt.einsum("ij,jk->ik", x, x), a, order=2)


def test_matmul_one_argument_transpose():
    from test_autodiff import check_transpose
    w = T(fixed((4, 3), 4))
    check_transpose(lambda a: rt.matmul(a, w), T(fixed((2, 4), 1)))
    check_transpose(lambda a: rt.matmul(w.T, a), T(fixed((4, 2), 1)))


# ---------------------------------------------------------------------------
# complex numbers (JAX's convention: for real f of z = x + iy the gradient is df/dx - i df/dy)
# ---------------------------------------------------------------------------
def C(a):
    return T(np.asarray(a, dtype=np.complex128), dtype=rt.complex128)


def zfixed(shape, seed=0):
    return fixed(shape, seed) + 1j * fixed(shape, seed + 50, -1.5, 1.0)


def num_vjp_complex(f, z, u, eps=1e-6):
    """The JAX-convention vjp of ``f`` at complex ``z`` for cotangent ``u``, by central differences:
    component k is Re<u, J e_k> - i Re<u, J (i e_k)> with <a, b> = sum(a * b)."""
    zn = N(z)
    un = N(u).ravel()
    r = np.zeros(zn.size, dtype=np.complex128)
    for k in range(zn.size):
        for unit, coef in ((1.0, 1.0), (1j, -1j)):
            d = np.zeros(zn.size, dtype=np.complex128)
            d[k] = unit * eps
            d = d.reshape(zn.shape)
            jd = (N(f(C(zn + d))) - N(f(C(zn - d)))).ravel() / (2 * eps)
            r[k] += coef * np.sum(un * jd).real
    return r.reshape(zn.shape)


COMPLEX_FNS = {
    "exp": lambda z: rt.exp(z),
    "mul": lambda z: z * z * (0.5 - 2j),
    "matmul": lambda z: rt.matmul(z, rt.reshape(z, [3, 2])),
    "abs": lambda z: rt.abs(z),
    "real": lambda z: unary_op("real", z, "real") * 1.5,
    "imag": lambda z: unary_op("imag", z, "imag") * 1.5,
    "conj": lambda z: rt.conjugate(z) * (1 + 1j),
    "abs_sq": lambda z: unary_op("real", z * rt.conjugate(z), "real"),
    "log_sin": lambda z: rt.log(z) + rt.sin(z),
    "div_sqrt": lambda z: rt.sqrt(z) / (z + 3.0),
}


@pytest.mark.parametrize("name", sorted(COMPLEX_FNS))
def test_complex_vjp_against_differences(name):
    f = COMPLEX_FNS[name]
    z = C(zfixed((2, 3), 3))
    out, fn = rt.vjp(f, z)
    u = T(fixed(out.shape, 4) + (1j * fixed(out.shape, 5) if out.dtype.kind == "c" else 0),
          dtype=out.dtype)
    g = fn(u)[0]
    assert g.dtype == rt.complex128
    np.testing.assert_allclose(N(g), num_vjp_complex(f, z, u), atol=1e-6, rtol=1e-6)
    # forward mode: J v by differences along a complex direction
    v = zfixed((2, 3), 9)
    t = rt.jvp(f, (z,), (C(v),))[1]
    fd = (N(f(C(N(z) + 1e-6 * v))) - N(f(C(N(z) - 1e-6 * v)))) / 2e-6
    np.testing.assert_allclose(N(t), fd, atol=1e-6, rtol=1e-6)
    rt.check_grads(f, (z,), order=2 if name not in ("abs",) else 1)


def test_complex_real_function_gradient_convention():
    # f(z) = |z|^2 = x^2 + y^2: df/dx - i df/dy = 2x - 2iy = 2 conj(z)
    z = C([3 + 4j, -1 + 0.5j])
    g = rt.grad(lambda a: rt.sum(unary_op("real", a * rt.conjugate(a), "real")))(z)
    np.testing.assert_allclose(N(g), 2 * np.conj(N(z)))
    g = rt.grad(lambda a: rt.sum(rt.abs(a)))(z)
    np.testing.assert_allclose(N(g), np.conj(N(z)) / np.abs(N(z)))
    g = rt.grad(lambda a: rt.sum(unary_op("imag", a, "imag")))(z)
    np.testing.assert_allclose(N(g), [-1j, -1j])
    g = rt.grad(lambda a: rt.sum(unary_op("real", a, "real")))(z)
    np.testing.assert_allclose(N(g), [1.0, 1.0])


def test_complex_abs_at_zero():
    g = rt.grad(lambda a: rt.sum(rt.abs(a)))(C([0j, 3 + 4j]))
    np.testing.assert_allclose(N(g), [0.0, 0.6 - 0.8j])


# ---------------------------------------------------------------------------
# JAX as an oracle (optional)
# ---------------------------------------------------------------------------
def _jax():
    j = pytest.importorskip("jax")
    j.config.update("jax_enable_x64", True)
    return j, j.numpy


JAX_CASES = {
    "exp": (lambda m, z: m.exp(z), True),
    "mul": (lambda m, z: z * z * (0.5 - 2j), True),
    "matmul": (lambda m, z: m.matmul(z, m.reshape(z, (3, 2))), True),
    "abs": (lambda m, z: m.abs(z), True),
    "real": (lambda m, z: m.real(z) * 1.5, True),
    "imag": (lambda m, z: m.imag(z) * 1.5, True),
    "conj": (lambda m, z: m.conj(z) * (1 + 1j), True),
    "sqrt_log": (lambda m, z: m.sqrt(z) * m.log(z), True),
    "tanh": (lambda m, z: m.tanh(z), True),
}


def _rt_mod():
    class M:
        exp = staticmethod(rt.exp)
        matmul = staticmethod(rt.matmul)
        reshape = staticmethod(lambda z, s: rt.reshape(z, list(s)))
        abs = staticmethod(rt.abs)
        real = staticmethod(lambda z: unary_op("real", z, "real"))
        imag = staticmethod(lambda z: unary_op("imag", z, "imag"))
        conj = staticmethod(rt.conjugate)
        sqrt = staticmethod(rt.sqrt)
        log = staticmethod(rt.log)
        tanh = staticmethod(rt.tanh)
    return M


@pytest.mark.parametrize("name", sorted(JAX_CASES))
def test_complex_vjp_matches_jax(name):
    jx, jnp = _jax()
    f = JAX_CASES[name][0]
    zn = zfixed((2, 3), 3)
    out, fn = rt.vjp(lambda z: f(_rt_mod(), z), C(zn))
    jout, jfn = jx.vjp(lambda z: f(jnp, z), jnp.asarray(zn))
    np.testing.assert_allclose(N(out), np.asarray(jout), rtol=1e-12, atol=1e-12)
    un = fixed(out.shape, 4) + (1j * fixed(out.shape, 5) if out.dtype.kind == "c" else 0)
    g = fn(T(un, dtype=out.dtype))[0]
    np.testing.assert_allclose(N(g), np.asarray(jfn(jnp.asarray(un, dtype=jout.dtype))[0]), rtol=1e-10, atol=1e-12)
    vn = zfixed((2, 3), 9)
    t = rt.jvp(lambda z: f(_rt_mod(), z), (C(zn),), (C(vn),))[1]
    jt = jx.jvp(lambda z: f(jnp, z), (jnp.asarray(zn),), (jnp.asarray(vn),))[1]
    np.testing.assert_allclose(N(t), np.asarray(jt), rtol=1e-10, atol=1e-12)


def test_real_scalar_of_complex_grad_matches_jax():
    jx, jnp = _jax()
    zn = zfixed((4,), 2)
    w = fixed((4,), 1)
    g = rt.grad(lambda z: rt.sum(rt.abs(rt.exp(z) * z) * T(w)))(C(zn))
    jg = jx.grad(lambda z: jnp.sum(jnp.abs(jnp.exp(z) * z) * w))(jnp.asarray(zn))
    np.testing.assert_allclose(N(g), np.asarray(jg), rtol=1e-10)


@pytest.mark.parametrize("name", ["prod_zeros", "cumprod_zeros", "max_ties", "maximum_ties", "sort", "clip",
                                  "pow0", "cummax", "take_along", "einsum"])
def test_real_ops_match_jax(name):
    jx, jnp = _jax()
    cases = {
        "prod_zeros": (lambda m, a: m.prod(a, axis=1), [[2.0, 0.0, 3.0], [1.0, 0.0, 0.0]]),
        "cumprod_zeros": (lambda m, a: m.cumprod(a, axis=1), [[2.0, 0.0, 3.0], [1.0, 0.0, 0.0]]),
        "max_ties": (lambda m, a: m.max(a, axis=1), [[2.0, 3.0, 3.0], [1.0, 1.0, 1.0]]),
        "maximum_ties": (lambda m, a: m.maximum(a, a[::-1]), [[2.0, 3.0, 3.0], [1.0, 3.0, 1.0]]),
        "sort": (lambda m, a: m.sort(a, axis=1), [[2.0, -1.0, 3.0], [1.5, 0.0, 0.5]]),
        # (away from the bounds: at x == lo JAX splits 0.5/0.5, rt gives x the whole gradient)
        "clip": (lambda m, a: m.clip(a, 0.0, 2.0), [[2.5, -1.0, 3.0], [1.5, 0.25, 0.5]]),
        "pow0": (lambda m, a: a ** 2 + a ** 1 + a ** 0, [[0.0, -1.0, 3.0], [1.5, 0.0, 0.5]]),
        "cummax": (lambda m, a: m.cummax(a, axis=1) if m is not jnp else jx.lax.cummax(a, axis=1),
                   [[2.0, -1.0, 3.0], [1.5, 0.0, 0.5]]),
        "take_along": (lambda m, a: m.take_along_axis(a, m.asarray([[2, 2], [0, 1]]), axis=1),
                       [[2.0, -1.0, 3.0], [1.5, 0.0, 0.5]]),
        "einsum": (lambda m, a: m.einsum("ij,kj->ik", a, a * 2.0), [[2.0, -1.0, 3.0], [1.5, 0.0, 0.5]]),
    }
    f, data = cases[name]

    class R:
        prod = staticmethod(lambda a, axis: rt.prod(a, axes=[axis]))
        cumprod = staticmethod(lambda a, axis: rt.cumprod(a, axis=axis))
        cummax = staticmethod(lambda a, axis: rt.cummax(a, axis=axis))
        max = staticmethod(lambda a, axis: rt.max(a, axes=[axis]))
        maximum = staticmethod(rt.maximum)
        sort = staticmethod(lambda a, axis: rt.sort(a, axis=axis)[0])
        clip = staticmethod(rt.clip)
        take_along_axis = staticmethod(rt.take_along_axis)
        asarray = staticmethod(lambda v: idx(v))
        einsum = staticmethod(rt.einsum)
    x = np.asarray(data)
    out, fn = rt.vjp(lambda a: f(R, a), T(x))
    jout, jfn = jx.vjp(lambda a: f(jnp, a), jnp.asarray(x))
    np.testing.assert_allclose(N(out), np.asarray(jout))
    u = fixed(out.shape, 3)
    np.testing.assert_allclose(N(fn(T(u))[0]), np.asarray(jfn(jnp.asarray(u))[0]), rtol=1e-12, atol=1e-12)
    v = fixed(x.shape, 8)
    t = rt.jvp(lambda a: f(R, a), (T(x),), (T(v),))[1]
    np.testing.assert_allclose(N(t), np.asarray(jx.jvp(lambda a: f(jnp, a), (jnp.asarray(x),),
                                                        (jnp.asarray(v),))[1]), rtol=1e-12, atol=1e-12)
