"""Every example of seed 004 (harpie's Harpie.Array), asserting the seed's printed output exactly.

Translation (API-CONVENTIONS.md): ``pretty x`` -> ``hp.pretty(x)``; a bare
array at the GHCi prompt -> ``hp.show(x)``; ``Just x`` / ``Nothing`` -> the
value / None; Haskell's ``==`` on arrays -> ``hp.equal``.  ``v = range [3]``,
``m = range [2,3]``, ``a = range [2,3,4]`` unless an example redefines them.
"""
import operator

import pytest

import runetensor as rt
from runetensor import harpie as hp

A24 = "UnsafeArray [2,3,4] [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23]"


@pytest.fixture
def a():
    return hp.range([2, 3, 4])


@pytest.fixture
def v():
    return hp.range([3])


@pytest.fixture
def m():
    return hp.range([2, 3])


def P(x):
    return hp.pretty(x)


def lines(*ls):
    return "\n".join(ls)


# --- construction ----------------------------------------------------------------
def test_array_show_and_pretty():
    a = hp.array([2, 3, 4], list(range(1, 25)))
    assert hp.show(a) == "UnsafeArray [2,3,4] [1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24]"
    assert repr(hp.show(a))  # show is a str
    assert P(a) == lines("[[[1,2,3,4],", "  [5,6,7,8],", "  [9,10,11,12]],",
                         " [[13,14,15,16],", "  [17,18,19,20],", "  [21,22,23,24]]]")


def test_array_unvalidated():
    assert hp.show(hp.array([2, 3], range(6))) == "UnsafeArray [2,3] [0,1,2,3,4,5]"


def test_array_operator():  # [2,3] >< [0..5]
    assert P(hp.array([2, 3], range(6))) == "[[0,1,2],\n [3,4,5]]"


def test_validate():
    assert hp.validate(hp.array([2, 3, 4], range(1, 24))) is False


def test_safe_array(a):
    r = hp.safe_array([2, 3, 4], range(24))
    assert r is not None and hp.equal(r, a)


def test_unsafe_modify_shape():
    r = hp.unsafe_modify_shape(hp.array([2, 3], range(6)), lambda s: [x + 1 for x in s])
    assert hp.show(r) == "UnsafeArray [3,4] [0,1,2,3,4,5]"
    assert not hp.validate(r)


def test_unsafe_modify_vector():
    r = hp.unsafe_modify_vector(hp.array([2, 3], range(6)), lambda vec: hp.fmap(lambda x: x + 1, vec))
    assert hp.show(r) == "UnsafeArray [2,3] [1,2,3,4,5,6]"


# --- conversion --------------------------------------------------------------------
def test_as_vector_vector_as():
    assert P(hp.as_vector(hp.range([2, 3]))) == "[0,1,2,3,4,5]"
    assert hp.show(hp.vector_as(list(range(6)))) == "UnsafeArray [6] [0,1,2,3,4,5]"
    # vectorAs . asVector == id ; asVector . vectorAs == flat
    m = hp.range([2, 3])
    assert hp.equal(hp.vector_as(hp.as_vector(m)), hp.flat(m))


def test_as_array_array_as():
    assert hp.show(hp.as_array(list(range(6)))) == "UnsafeArray [6] [0,1,2,3,4,5]"
    assert hp.show(hp.array_as(hp.range([2, 3]))) == "[0,1,2,3,4,5]"


# --- shape access --------------------------------------------------------------------
def test_shape_rank_size_length(a):
    assert hp.show(hp.shape(a)) == "[2,3,4]"
    assert hp.rank(a) == 3
    assert hp.size(a) == 24
    assert hp.length(a) == 2
    assert hp.length(hp.to_scalar(0)) == 1


def test_is_null():
    assert hp.is_null(hp.array([2, 0], [])) is True
    assert hp.is_null(hp.array([], [4])) is False


# --- indexing ---------------------------------------------------------------------------
def test_index(a):
    assert hp.index(a, [1, 2, 3]) == 23


def test_index_safe(a):
    assert hp.index_safe(a, [1, 2, 3]) == 23
    assert hp.index_safe(a, [2, 3, 1]) is None


def test_tabulate(a):
    def flatten(i):  # S.flatten [2,3,4]
        return (i[0] * 3 + i[1]) * 4 + i[2]
    assert hp.equal(hp.tabulate([2, 3, 4], flatten), a)


def test_backpermute(a):
    rev = lambda s: list(reversed(s))  # noqa: E731
    assert P(hp.backpermute(a, rev, rev)) == lines(
        "[[[0,12],", "  [4,16],", "  [8,20]],", " [[1,13],", "  [5,17],", "  [9,21]],",
        " [[2,14],", "  [6,18],", "  [10,22]],", " [[3,15],", "  [7,19],", "  [11,23]]]")


# --- scalars ------------------------------------------------------------------------------
def test_from_scalar():
    assert hp.from_scalar(hp.array([], [3])) == 3


def test_to_scalar_is_scalar():
    s = hp.to_scalar(2)
    assert hp.rank(s) == 0 and hp.is_scalar(s) is True
    assert hp.show(s) == "UnsafeArray [] [2]"


def test_as_singleton_as_scalar():
    assert hp.show(hp.as_singleton(hp.to_scalar(4))) == "UnsafeArray [1] [4]"
    assert hp.show(hp.as_scalar(hp.singleton(3))) == "UnsafeArray [] [3]"


# --- creation -------------------------------------------------------------------------------
def test_empty():
    assert hp.show(hp.empty()) == "UnsafeArray [0] []"


def test_range_corange():
    assert P(hp.range([2, 3])) == "[[0,1,2],\n [3,4,5]]"
    assert P(hp.corange([2, 3, 4])) == lines(
        "[[[0,6,12,18],", "  [2,8,14,20],", "  [4,10,16,22]],",
        " [[1,7,13,19],", "  [3,9,15,21],", "  [5,11,17,23]]]")


def test_indices():
    assert P(hp.indices([3, 3])) == lines(
        "[[[0,0],[0,1],[0,2]],", " [[1,0],[1,1],[1,2]],", " [[2,0],[2,1],[2,2]]]")


def test_ident_konst():
    assert P(hp.ident([3, 3])) == "[[1,0,0],\n [0,1,0],\n [0,0,1]]"
    assert P(hp.konst([3, 2], 1)) == "[[1,1],\n [1,1],\n [1,1]]"


def test_singleton():
    assert P(hp.singleton(1)) == "[1]"
    assert hp.equal(hp.singleton(3), hp.to_scalar(3)) is False
    assert hp.equal(hp.as_vector(hp.singleton(3)), hp.as_vector(hp.to_scalar(3))) is True


def test_diag_undiag():
    assert P(hp.diag(hp.ident([3, 3]))) == "[1,1,1]"
    assert P(hp.undiag(hp.range([3]))) == "[[0,0,0],\n [0,1,0],\n [0,0,2]]"


# --- element level --------------------------------------------------------------------------
def test_zip_with(v):
    assert hp.show(hp.zip_with(v, v, operator.sub)) == "UnsafeArray [3] [0,0,0]"
    assert hp.show(hp.zip_with(v, v, lambda x, y: x - y)) == "UnsafeArray [3] [0,0,0]"


def test_zip_with_safe():
    assert hp.zip_with_safe(hp.range([3]), hp.range([4]), operator.sub) is None


def test_modify():
    assert P(hp.modify(hp.range([3, 2]), [0, 0], lambda _: 100)) == "[[100,1],\n [2,3],\n [4,5]]"


def test_imap(a):
    assert P(hp.imap(a, lambda xs, x: x - sum(xs))) == lines(
        "[[[0,0,0,0],", "  [3,3,3,3],", "  [6,6,6,6]],",
        " [[11,11,11,11],", "  [14,14,14,14],", "  [17,17,17,17]]]")


# --- function generalisers ----------------------------------------------------------------------
def test_row_col_dims_wise(a):
    assert hp.show(hp.row_wise(a, hp.indexes, [1, 0])) == "UnsafeArray [4] [12,13,14,15]"
    assert hp.show(hp.col_wise(a, hp.indexes, [1, 0])) == "UnsafeArray [2] [1,13]"
    assert hp.show(hp.dims_wise(a, hp.take, [0, 2], [1, 2])) == "UnsafeArray [1,3,2] [0,1,4,5,8,9]"


# --- single-dimension functions ---------------------------------------------------------------------
def test_take(a):
    assert P(hp.take(a, 2, 1)) == lines("[[[0],", "  [4],", "  [8]],", " [[12],", "  [16],", "  [20]]]")
    assert P(hp.take(a, 2, -1)) == lines("[[[3],", "  [7],", "  [11]],", " [[15],", "  [19],", "  [23]]]")


def test_drop(a):
    assert P(hp.drop(a, 2, 1)) == lines("[[[1,2,3],", "  [5,6,7],", "  [9,10,11]],",
                                        " [[13,14,15],", "  [17,18,19],", "  [21,22,23]]]")
    assert P(hp.drop(a, 2, -1)) == lines("[[[0,1,2],", "  [4,5,6],", "  [8,9,10]],",
                                         " [[12,13,14],", "  [16,17,18],", "  [20,21,22]]]")


def test_select(a):
    assert P(hp.select(a, 2, 3)) == "[[3,7,11],\n [15,19,23]]"


def test_insert(a):
    assert P(hp.insert(a, hp.konst([2, 3], 0), 2, 0)) == lines(
        "[[[0,0,1,2,3],", "  [0,4,5,6,7],", "  [0,8,9,10,11]],",
        " [[0,12,13,14,15],", "  [0,16,17,18,19],", "  [0,20,21,22,23]]]")
    assert hp.show(hp.insert(hp.to_scalar(1), hp.to_scalar(2), 0, 0)) == "UnsafeArray [2] [2,1]"


def test_delete(a):
    assert P(hp.delete(a, 2, 0)) == lines("[[[1,2,3],", "  [5,6,7],", "  [9,10,11]],",
                                          " [[13,14,15],", "  [17,18,19],", "  [21,22,23]]]")


def test_append_prepend(a):
    assert P(hp.append(a, hp.konst([2, 3], 0), 2)) == lines(
        "[[[0,1,2,3,0],", "  [4,5,6,7,0],", "  [8,9,10,11,0]],",
        " [[12,13,14,15,0],", "  [16,17,18,19,0],", "  [20,21,22,23,0]]]")
    assert P(hp.prepend(hp.konst([2, 3], 0), a, 2)) == lines(
        "[[[0,0,1,2,3],", "  [0,4,5,6,7],", "  [0,8,9,10,11]],",
        " [[0,12,13,14,15],", "  [0,16,17,18,19],", "  [0,20,21,22,23]]]")


def test_concatenate(a):
    assert hp.show(hp.shape(hp.concatenate(a, a, 1))) == "[2,6,4]"
    assert hp.show(hp.concatenate(hp.to_scalar(1), hp.to_scalar(2), 0)) == "UnsafeArray [2] [1,2]"
    assert hp.show(hp.concatenate(hp.to_scalar(0), hp.as_array([1, 2, 3]), 0)) == "UnsafeArray [4] [0,1,2,3]"


def test_couple():
    assert P(hp.couple(hp.as_array([1, 2, 3]), hp.as_array([4, 5, 6]), 0)) == "[[1,2,3],\n [4,5,6]]"


def test_slice(a):
    assert P(hp.slice(a, 2, 1, 2)) == lines("[[[1,2],", "  [5,6],", "  [9,10]],",
                                            " [[13,14],", "  [17,18],", "  [21,22]]]")


ROT = lines("[[[8,9,10,11],", "  [0,1,2,3],", "  [4,5,6,7]],",
            " [[20,21,22,23],", "  [12,13,14,15],", "  [16,17,18,19]]]")


def test_rotate(a):
    assert P(hp.rotate(a, 1, 2)) == ROT


# --- multi-dimension functions ------------------------------------------------------------------------
def test_takes_drops(a):
    assert P(hp.takes(a, [0, 2], [1, -3])) == "[[[1,2,3],\n  [5,6,7],\n  [9,10,11]]]"
    assert P(hp.drops(a, [0, 1, 2], [1, 2, -3])) == "[[[20]]]"


def test_indexes_slices(a):
    assert P(hp.indexes(a, [0, 1], [1, 1])) == "[16,17,18,19]"
    assert P(hp.slices(a, [2, 0], [1, 1], [2, 1])) == "[[[13,14],\n  [17,18],\n  [21,22]]]"


def test_heads_lasts_tails_inits(a):
    assert P(hp.heads(a, [0, 2])) == "[0,4,8]"
    assert P(hp.lasts(a, [0, 2])) == "[15,19,23]"
    assert P(hp.tails(a, [0, 2])) == "[[[13,14,15],\n  [17,18,19],\n  [21,22,23]]]"
    assert P(hp.inits(a, [0, 2])) == "[[[0,1,2],\n  [4,5,6],\n  [8,9,10]]]"


# --- function application -----------------------------------------------------------------------------
def test_extracts(a):
    assert P(hp.fmap(hp.shape, hp.extracts(a, [0]))) == "[[3,4],[3,4]]"


def test_reduces(a):
    assert P(hp.reduces(a, [0], sum)) == "[66,210]"
    assert P(hp.reduces(a, [0, 2], sum)) == "[[12,15,18,21],\n [48,51,54,57]]"


def test_reduces_rt_sum(a):
    assert P(hp.reduces(a, [0], rt.sum)) == "[66,210]"
    assert P(hp.reduces(a, [0, 2], rt.sum)) == "[[12,15,18,21],\n [48,51,54,57]]"


def test_joins(a):
    e = hp.extracts(a, [1, 0])
    assert hp.equal(a, hp.joins(e, [1, 0]))


def test_joins_safe(a):
    j = hp.joins_safe(hp.extracts(a, [1, 0]), [1, 0])
    assert j is not None and hp.equal(a, j)


def test_join(a):
    assert hp.equal(a, hp.join(hp.extracts(a, [0, 1])))


def test_join_safe(a):
    r = hp.join_safe(hp.extracts(a, [0, 1]))
    assert "Just (" + hp.show(r) + ")" == "Just (" + A24 + ")"


def test_traverses(capsys):
    r = hp.traverses(hp.range([2, 3]), [1], print)
    assert capsys.readouterr().out == "0\n3\n1\n4\n2\n5\n"
    assert hp.show(r) == "UnsafeArray [2,3] [(),(),(),(),(),()]"


TRANSPOSED = lines("[[[0,12],", "  [4,16],", "  [8,20]],", " [[1,13],", "  [5,17],", "  [9,21]],",
                   " [[2,14],", "  [6,18],", "  [10,22]],", " [[3,15],", "  [7,19],", "  [11,23]]]")


def test_maps(a):
    assert P(hp.maps(a, [1], hp.transpose)) == TRANSPOSED


def test_filters(a):
    r = hp.filters(a, [0, 1], lambda x: any(e % 7 == 0 for e in hp.array_as(x)))
    assert P(r) == "[[0,1,2,3],\n [4,5,6,7],\n [12,13,14,15],\n [20,21,22,23]]"


def test_zips(a):
    r = hp.zips(a, hp.reverses(a, [0]), [0, 1], lambda x, y: hp.zip_with(x, y, lambda p, q: (p, q)))
    assert P(r) == lines(
        "[[[(0,12),(1,13),(2,14),(3,15)],",
        "  [(4,16),(5,17),(6,18),(7,19)],",
        "  [(8,20),(9,21),(10,22),(11,23)]],",
        " [[(12,0),(13,1),(14,2),(15,3)],",
        "  [(16,4),(17,5),(18,6),(19,7)],",
        "  [(20,8),(21,9),(22,10),(23,11)]]]")


def test_zips_safe():
    pair = lambda x, y: hp.zip_with(x, y, lambda p, q: (p, q))  # noqa: E731
    assert hp.zips_safe(hp.as_array([1]), hp.as_array([1, 2]), [0], pair) is None


def test_modifies(a):
    r = hp.modifies(a, lambda x: hp.fmap(lambda e: 100 + e, x), [2], [0])
    assert P(r) == lines("[[[100,1,2,3],", "  [104,5,6,7],", "  [108,9,10,11]],",
                         " [[112,13,14,15],", "  [116,17,18,19],", "  [120,21,22,23]]]")


def test_diffs(a):
    want = lines("[[[4,4,4,4],", "  [4,4,4,4]],", " [[4,4,4,4],", "  [4,4,4,4]]]")
    assert P(hp.diffs(a, [1], [1], lambda x, y: hp.zip_with(x, y, operator.sub))) == want
    assert P(hp.diffs(a, [1], [1], operator.sub)) == want  # the vectorised path


# --- expansion and contraction ---------------------------------------------------------------------------
def test_expand():
    x = hp.array([3], [1, 2, 3])
    assert P(hp.expand(x, x, operator.mul)) == "[[1,2,3],\n [2,4,6],\n [3,6,9]]"
    assert P(hp.expand(x, x, lambda p, q: p * q)) == "[[1,2,3],\n [2,4,6],\n [3,6,9]]"


def test_expand_pairs():
    i2 = hp.indices([2, 2])
    assert P(hp.expand(i2, i2, lambda p, q: (p, q))) == lines(
        "[[[[([0,0],[0,0]),([0,0],[0,1])],",
        "   [([0,0],[1,0]),([0,0],[1,1])]],",
        "  [[([0,1],[0,0]),([0,1],[0,1])],",
        "   [([0,1],[1,0]),([0,1],[1,1])]]],",
        " [[[([1,0],[0,0]),([1,0],[0,1])],",
        "   [([1,0],[1,0]),([1,0],[1,1])]],",
        "  [[([1,1],[0,0]),([1,1],[0,1])],",
        "   [([1,1],[1,0]),([1,1],[1,1])]]]]")


def test_expand_coexpand(v):
    w = hp.fmap(lambda x: x + 3, v)
    pair = lambda p, q: (p, q)  # noqa: E731
    assert P(hp.expand(v, w, pair)) == "[[(0,3),(0,4),(0,5)],\n [(1,3),(1,4),(1,5)],\n [(2,3),(2,4),(2,5)]]"
    assert P(hp.coexpand(v, w, pair)) == "[[(0,3),(1,3),(2,3)],\n [(0,4),(1,4),(2,4)],\n [(0,5),(1,5),(2,5)]]"


def test_contract(m):
    assert P(hp.contract(hp.expand(m, hp.transpose(m), operator.mul), [1, 2], sum)) == "[[5,14],\n [14,50]]"


def test_prod():
    r = hp.prod(hp.range([2, 3]), hp.range([3, 2]), [1], [0], sum, operator.mul)
    assert P(r) == "[[10,13],\n [28,40]]"


def test_dot(v, m):
    assert P(hp.dot(m, hp.transpose(m), sum, operator.mul)) == "[[5,14],\n [14,50]]"
    assert P(hp.dot(v, v, sum, operator.mul)) == "5"
    assert P(hp.dot(v, hp.transpose(m), sum, operator.mul)) == "[5,14]"
    assert P(hp.dot(m, v, sum, operator.mul)) == "[5,14]"


def test_mult(v, m):
    assert P(hp.mult(m, hp.transpose(m))) == "[[5,14],\n [14,50]]"
    assert P(hp.mult(v, v)) == "5"
    assert P(hp.mult(v, hp.transpose(m))) == "[5,14]"
    assert P(hp.mult(m, v)) == "[5,14]"


def test_windows():
    assert hp.show(hp.shape(hp.windows(hp.range([4, 3, 2]), [2, 2]))) == "[3,2,2,2,2]"


# --- search ---------------------------------------------------------------------------------------------------
def test_find():
    a = hp.cycle(hp.range([3]), [4, 4])
    i = hp.array([2, 2], [1, 2, 2, 0])
    assert P(hp.find(i, a)) == "[[False,True,False],\n [True,False,False],\n [False,False,True]]"


def test_find_no_overlap():
    a = hp.konst([5, 5], 1)
    i = hp.konst([2, 2], 1)
    assert P(hp.find_no_overlap(i, a)) == lines(
        "[[True,False,True,False],", " [False,False,False,False],",
        " [True,False,True,False],", " [False,False,False,False]]")


def test_find_indices():
    b = hp.cycle(hp.range([3]), [4, 4])
    i = hp.array([2, 2], [1, 2, 2, 0])
    assert P(hp.find_indices(i, b)) == "[[0,1],[1,0],[2,2]]"


def test_prefix_suffix_infix(a):
    assert hp.is_prefix_of(hp.array([2, 2], [0, 1, 4, 5]), a) is True
    assert hp.is_suffix_of(hp.array([2, 2], [18, 19, 22, 23]), a) is True
    assert hp.is_infix_of(hp.array([2, 2], [18, 19, 22, 23]), a) is True


# --- shape manipulations --------------------------------------------------------------------------------------------
def test_fill():
    assert P(hp.fill(hp.array([3], []), 0)) == "[0,0,0]"
    assert P(hp.fill(hp.array([3], [1, 2, 3, 4]), 0)) == "[1,2,3]"
    assert hp.validate(hp.fill(hp.array([3], []), 0))


def test_cut(a):
    assert hp.show(hp.cut(hp.array([4], range(4)), [2])) == "UnsafeArray [2] [0,1]"
    assert hp.show(hp.cut_suffix(a, [2, 2])) == "UnsafeArray [2,2] [18,19,22,23]"


def test_pad_lpad():
    assert hp.show(hp.pad(hp.array([4], range(4)), 0, [5])) == "UnsafeArray [5] [0,1,2,3,0]"
    assert hp.show(hp.lpad(hp.array([4], range(4)), 0, [5])) == "UnsafeArray [5] [0,0,1,2,3]"
    assert P(hp.lpad(hp.range([2, 2]), 0, [3, 3])) == "[[0,0,0],\n [0,0,1],\n [0,2,3]]"


def test_reshape(a):
    assert P(hp.reshape(a, [4, 3, 2])) == lines(
        "[[[0,1],", "  [2,3],", "  [4,5]],", " [[6,7],", "  [8,9],", "  [10,11]],",
        " [[12,13],", "  [14,15],", "  [16,17]],", " [[18,19],", "  [20,21],", "  [22,23]]]")


def test_flat():
    assert P(hp.flat(hp.range([2, 2]))) == "[0,1,2,3]"
    assert P(hp.flat(hp.to_scalar(0))) == "[0]"


def test_repeat():
    assert P(hp.repeat(hp.array([2], [1, 2]), [2, 2, 2])) == "[[[1,2],\n  [1,2]],\n [[1,2],\n  [1,2]]]"


def test_cycle():
    assert P(hp.cycle(hp.array([3], [1, 2, 3]), [2, 2, 2])) == "[[[1,2],\n  [3,1]],\n [[2,3],\n  [1,2]]]"


def test_rerank(a):
    assert hp.show(hp.shape(hp.rerank(a, 4))) == "[1,2,3,4]"
    assert hp.show(hp.shape(hp.rerank(a, 2))) == "[6,4]"


def test_reorder(a):
    assert P(hp.reorder(a, [2, 0, 1])) == lines(
        "[[[0,4,8],", "  [12,16,20]],", " [[1,5,9],", "  [13,17,21]],",
        " [[2,6,10],", "  [14,18,22]],", " [[3,7,11],", "  [15,19,23]]]")


def test_squeeze():
    sq = hp.array([2, 1, 3, 4, 1], range(1, 25))
    assert hp.show(hp.shape(hp.squeeze(sq))) == "[2,3,4]"
    assert hp.show(hp.shape(hp.squeeze(hp.singleton(0)))) == "[]"


def test_elongate(a):
    assert hp.show(hp.shape(hp.elongate(a, 1))) == "[2,1,3,4]"
    assert hp.show(hp.elongate(hp.to_scalar(1), 0)) == "UnsafeArray [1] [1]"


def test_transpose(a):
    assert hp.index(hp.transpose(a), [1, 0, 0]) == hp.index(a, [0, 0, 1])
    assert P(hp.transpose(hp.array([2, 2, 2], range(1, 9)))) == "[[[1,5],\n  [3,7]],\n [[2,6],\n  [4,8]]]"


def test_inflate():
    assert P(hp.inflate(hp.array([3], [0, 1, 2]), 0, 2)) == "[[0,1,2],\n [0,1,2]]"


INTER = lines("[[[0,0,1,0,2,0,3],", "  [4,0,5,0,6,0,7],", "  [8,0,9,0,10,0,11]],",
              " [[12,0,13,0,14,0,15],", "  [16,0,17,0,18,0,19],", "  [20,0,21,0,22,0,23]]]")


def test_intercalate_intersperse(a):
    assert P(hp.intercalate(hp.konst([2, 3], 0), a, 2)) == INTER
    assert P(hp.intersperse(a, 2, 0)) == INTER


def test_concats(a):
    assert P(hp.concats(a, [0, 1], 1)) == lines(
        "[[0,4,8,12,16,20],", " [1,5,9,13,17,21],", " [2,6,10,14,18,22],", " [3,7,11,15,19,23]]")


def test_reverses_rotates(a):
    assert P(hp.reverses(a, [0, 1])) == lines(
        "[[[20,21,22,23],", "  [16,17,18,19],", "  [12,13,14,15]],",
        " [[8,9,10,11],", "  [4,5,6,7],", "  [0,1,2,3]]]")
    assert P(hp.rotates(a, [1], [2])) == ROT


# --- sorting ----------------------------------------------------------------------------------------------------------
def test_sorts():
    x = hp.array([2, 2], [2, 3, 1, 4])
    assert hp.show(hp.sorts(x, [0])) == "UnsafeArray [2,2] [1,4,2,3]"
    assert hp.show(hp.sorts(x, [1])) == "UnsafeArray [2,2] [2,3,1,4]"
    assert hp.show(hp.sorts(x, [0, 1])) == "UnsafeArray [2,2] [1,2,3,4]"


def test_sorts_by_orders():
    x = hp.array([2, 2], [2, 3, 1, 4])
    down = lambda sub: hp.fmap(lambda e: -e, sub)  # noqa: E731  (fmap Down on numbers)
    assert hp.show(hp.sorts_by(x, [0], down)) == "UnsafeArray [2,2] [2,3,1,4]"
    assert hp.show(hp.sorts_by(x, [0], operator.neg)) == "UnsafeArray [2,2] [2,3,1,4]"
    assert hp.show(hp.orders(x, [0])) == "UnsafeArray [2] [1,0]"
    assert hp.show(hp.orders_by(x, [0], down)) == "UnsafeArray [2] [0,1]"


# --- transmission -----------------------------------------------------------------------------------------------------
def test_transmit():
    a = hp.array([2, 3], range(6))
    add = lambda x, y: hp.zip_with(x, y, operator.add)  # noqa: E731
    assert P(hp.transmit(hp.to_scalar(1), a, add)) == "[[1,2,3],\n [4,5,6]]"
    assert P(hp.transmit(hp.to_scalar(1), a, operator.add)) == "[[1,2,3],\n [4,5,6]]"
    assert hp.transmit_safe(hp.array([3], [1, 2, 3]), a, add) is None


def test_transmit_op(a):
    assert P(hp.transmit_op(a, hp.as_array([1, 2]), operator.mul)) == lines(
        "[[[0,1,2,3],", "  [4,5,6,7],", "  [8,9,10,11]],",
        " [[24,26,28,30],", "  [32,34,36,38],", "  [40,42,44,46]]]")


def test_telecasts():
    a = hp.array([2, 3], range(6))
    b = hp.array([3], range(3))
    r = hp.telecasts(a, b, [1], [0], lambda x, y: hp.concatenate(x, y, 0))
    assert P(r) == "[[0,1,2],\n [3,4,5],\n [0,1,2]]"
    add = lambda x, y: hp.zip_with(x, y, operator.add)  # noqa: E731
    assert hp.telecasts_safe(a, hp.array([1], [1]), [0], [0], add) is None


# --- rows -------------------------------------------------------------------------------------------------------------
def test_uncons_pattern():
    x, xs = hp.uncons(hp.array([4], range(4)))
    assert hp.show(x) == "UnsafeArray [] [0]"
    assert hp.show(xs) == "UnsafeArray [3] [1,2,3]"
    assert hp.show(hp.cons(x, xs)) == "UnsafeArray [4] [0,1,2,3]"


def test_cons_uncons():
    assert P(hp.cons(hp.array([2], [0, 1]), hp.array([2, 2], [2, 3, 4, 5]))) == "[[0,1],\n [2,3],\n [4,5]]"
    assert hp.show(hp.uncons(hp.array([3, 2], range(6)))) == "(UnsafeArray [2] [0,1],UnsafeArray [2,2] [2,3,4,5])"


def test_unsnoc_pattern():
    xs, x = hp.unsnoc(hp.array([4], range(4)))
    assert hp.show(x) == "UnsafeArray [] [3]"
    assert hp.show(xs) == "UnsafeArray [3] [0,1,2]"
    assert hp.show(hp.snoc(xs, x)) == "UnsafeArray [4] [0,1,2,3]"


def test_snoc_unsnoc():
    assert P(hp.snoc(hp.array([2, 2], [0, 1, 2, 3]), hp.array([2], [4, 5]))) == "[[0,1],\n [2,3],\n [4,5]]"
    assert hp.show(hp.unsnoc(hp.array([3, 2], range(6)))) == "(UnsafeArray [2,2] [0,1,2,3],UnsafeArray [2] [4,5])"


def test_iota():
    assert hp.show(hp.iota(5)) == "UnsafeArray [5] [0,1,2,3,4]"


# --- math -------------------------------------------------------------------------------------------------------------
def test_uniform_properties():
    # The seed's numbers come from Haskell's StdGen (mkStdGen 42); runetensor's
    # generator differs, so we check shape, range, type and determinism instead.
    u = hp.uniform([2, 3, 4], (0, 9), seed=42)
    assert hp.shape(u) == [2, 3, 4] and u.dtype == rt.int64
    vals = hp.array_as(u)
    assert all(0 <= x <= 9 for x in vals)
    assert hp.equal(u, hp.uniform([2, 3, 4], (0, 9), seed=42))
    assert not hp.equal(u, hp.uniform([2, 3, 4], (0, 9), seed=43))
    big = hp.array_as(hp.uniform([2000], (0, 9), seed=1))
    assert set(big) == set(range(10))  # both ends are reachable (inclusive, as uniformR)
    f = hp.uniform([100], (-1.5, 2.5), seed=7)
    assert f.dtype == rt.float64 and all(-1.5 <= x <= 2.5 for x in hp.array_as(f))


def test_invtri():
    t = hp.array([3, 3], [1., 0, 1, 0, 1, 2, 0, 0, 1])
    assert P(hp.invtri(t)) == "[[1.0,0.0,-1.0],\n [0.0,1.0,-2.0],\n [0.0,0.0,1.0]]"
    assert hp.equal(hp.ident(hp.shape(t)), hp.mult(t, hp.invtri(t)))


E = [4., 12, -16, 12, 37, -43, -16, -43, 98]


def test_inverse():
    e = hp.array([3, 3], E)
    assert P(hp.inverse(e)) == lines(
        "[[49.36111111111111,-13.555555555555554,2.1111111111111107],",
        " [-13.555555555555554,3.7777777777777772,-0.5555555555555555],",
        " [2.1111111111111107,-0.5555555555555555,0.1111111111111111]]")


def test_chol():
    e = hp.array([3, 3], E)
    c = hp.chol(e)
    assert P(c) == "[[2.0,0.0,0.0],\n [6.0,1.0,0.0],\n [-8.0,5.0,3.0]]"
    assert hp.equal(hp.mult(c, hp.transpose(c)), e)
