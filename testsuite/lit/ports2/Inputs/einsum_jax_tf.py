"""JAX's, TensorFlow's and CuPy's einsum tests translated to tdsl einsums, PyTorch as the oracle
(harness.py: forward and autograd, float32 and float64, tdslc --check).

Usage: einsum_jax_tf.py TDSLC WORKDIR [--filter S] [--list] [--no-check]

Sources (cited per case):
  jax      google/jax tests/lax_numpy_einsum_test.py (test_one_operand_*, test_two_operands_*,
           test_three_operands_*, test_tf_unsupported_*, test_from_dask, the broadcasting
           tests, test_inf_nan, test_einsum_path, test_einsum_kpmurphy_example, the
           optimization-mode signatures)
  tf       tensorflow/python/kernel_tests/linalg/einsum_op_test.py (EinsumOpTest,
           EinsumGradTest, EinsumBenchmark's equations at small sizes) and
           tensorflow/python/ops/special_math_ops_test.py (EinsumTest)
  cupy     cupy tests/cupy_tests/linalg_tests/test_einsum.py (unary, binary, with scalars,
           ternary; TestEinSumError's cases as refused programs)
A numpy-style spec "ij,jk->ik" becomes the tdsl spec "ij;jk=>ik" (single-character mode,
output axes; "..." is the output row variable); an implicit output is numpy's (the
letters seen once, sorted, after the ellipsis). Three or more operands become a chain of
binary einsums whose intermediates keep the letters a later operand or the result uses.
A letter repeated in the result (TensorFlow's generalized diagonal, "a->aa") writes the
diagonal and leaves the other cells 0, as tdsl(7) and TensorFlow's EinsumOp do.
Where tdsl deliberately differs (LANGUAGE.md section 9), the case checks tdsl's rule:
  - a spec whose result drops the ellipsis while the arguments' ellipsis has axes
    ("...ij,...jk->ik" over a batch of 2, tf testInvalid; "...->", cupy): tdsl reduces
    the row variable's axes as it reduces any axis missing from the result (tdsl(7)
    Axes), where TensorFlow and CuPy refuse; the case checks the sum.
  - an operand with fewer axes than its spec names ("...ij" over a vector, tf
    testInvalid; "ij" over a vector, cupy test_many_dimension2): the missing leading
    axes broadcast (row polymorphism, tdsl(7)), so the vector is a 1 x n matrix;
    TensorFlow and CuPy refuse.
  - an ellipsis only in the result ("->..."): a row variable of an %op result must occur
    in an argument (9.8), a located error (refused/tf_result_only_ellipsis).
  - a 0-d result meeting a number has the number's one axis (the seed): not used here."""
import os
import sys
from collections import defaultdict
from itertools import cycle

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Suite  # noqa: E402

S = Suite("", check_every=2)
JAX = "jax tests/lax_numpy_einsum_test.py"
TF = "tensorflow kernel_tests/linalg/einsum_op_test.py"
TFS = "tensorflow ops/special_math_ops_test.py"


def parse(spec):
    spec = spec.replace(" ", "")
    if "->" in spec:
        lhs, out = spec.split("->")
    else:
        lhs = spec
        letters = [c for c in lhs if c.isalpha()]
        out = ("..." if "..." in lhs else "") + "".join(sorted(c for c in set(letters) if letters.count(c) == 1))
    return lhs.split(","), out


def toks(term):
    r, i = [], 0
    while i < len(term):
        if term.startswith("...", i):
            r.append("...")
            i += 3
        else:
            r.append(term[i])
            i += 1
    return r


def chain(terms, out):
    """Binary steps (left tokens, right tokens or None, result tokens)."""
    if len(terms) == 1:
        return [(toks(terms[0]), None, toks(out))]
    steps, cur = [], toks(terms[0])
    for k in range(1, len(terms)):
        right = toks(terms[k])
        if k == len(terms) - 1:
            res = toks(out)
        else:
            later = "".join(terms[k + 1:]) + out
            res = []
            if "..." in cur + right and "..." in later:
                res.append("...")
            for c in cur + right:
                if c != "..." and c in later and c not in res:
                    res.append(c)
        steps.append((cur, right, res))
        cur = res
    return steps


def tdsl_expr(spec):
    """The tdsl expression over $0, $1, ... for a numpy-style spec."""
    terms, out = parse(spec)
    steps = chain(terms, out)
    j = lambda ts: "".join(ts)
    cur = "$0"
    for k, (l, r, res) in enumerate(steps):
        if r is None:
            cur = '%s ++ "%s => %s"' % (cur, j(l), j(res))
        else:
            cur = '(%s) +* "%s; %s => %s" $%d' % (cur, j(l), j(r), j(res), k + 1)
    return cur


def oracle(spec):
    """torch einsum for the spec; a letter repeated in the result embeds the
    deduplicated result on that diagonal (zeros elsewhere)."""
    terms, out = parse(spec)
    ot = toks(out)
    uniq = []
    for c in ot:
        if c not in uniq:
            uniq.append(c)

    def fn(*ops):
        base = torch.einsum(",".join(terms) + "->" + "".join(uniq), *ops)
        if len(uniq) == len(ot):
            return base
        size = dict(zip(uniq, base.shape))
        res = torch.zeros([size[c] for c in ot], dtype=base.dtype)
        grids = torch.meshgrid(*[torch.arange(size[c]) for c in uniq], indexing="ij")
        return res.index_put(tuple(grids[uniq.index(c)] for c in ot), base)
    return fn


def ein(src, name, spec, shapes, grad=True, vals=None, differs=None, dyn=None, tol=1e-4):
    S.case(src.split()[0], name, src, shapes, tdsl_expr(spec), oracle(spec), grad=grad, vals=vals,
           differs=differs, dyn=dyn, tol=tol)


# ---------------------------------------------------------------- JAX
J = [
    ("three_operands_1", "i,j,k->ijk", [(3,), (4,), (5,)]),
    ("two_operands_1", "ij,j->i", [(3, 4), (4,)]),
    ("two_operands_2", "ijk,j->i", [(3, 4, 5), (4,)]),
    ("two_operands_3", "iji,i->j", [(3, 4, 3), (3,)]),
    ("two_operands_4", "ij,ij->", [(3, 4), (3, 4)]),
    ("two_operands_5", "nij,jk->nik", [(10, 2, 3), (3, 4)]),
    ("two_operands_6", "sa,shb->shab", [(2, 1), (2, 3, 4)]),
    ("one_operand_1", "ijk->j", [(3, 4, 5)]),
    ("one_operand_2", "ijk->kij", [(3, 4, 5)]),
    ("one_operand_3", "ijk->ki", [(3, 4, 5)]),
    ("one_operand_5", "...ijk->...ki", [(2, 3, 4, 5)]),
    ("one_operand_6", "...ijk->ki", [(3, 4, 5)]),
    ("one_operand_7", "ii->", [(3, 3)]),
    ("one_operand_8", "ij->", [(3, 3)]),
    ("one_operand_9", "iii->", [(3, 3, 3)]),
    ("one_operand_10", "ii->i", [(3, 3)]),
    ("one_operand_11", "iij->i", [(3, 3, 4)]),
    ("one_operand_12", "iii->i", [(3, 3, 3)]),
    ("one_operand_13", "iijkk->i", [(3, 3, 5, 4, 4)]),
    ("one_operand_14", "iijkk->ik", [(3, 3, 5, 4, 4)]),
    ("one_operand_15", "iijkl->il", [(3, 3, 5, 4, 4)]),
    ("one_operand_16", "ij->ij", [(3, 3)]),
    ("tf_unsupported_1", "ij...,jk...->ik...", [(2, 3, 5, 1), (3, 4, 5, 1)]),
    ("tf_unsupported_2", "ijj,k->ik", [(2, 3, 3), (4,)]),
    ("tf_unsupported_3", "ij,ij,jk->ik", [(2, 3), (2, 3), (3, 4)]),
    ("ordered_front_batch", "ijkl,ijml->ijkm", [(1, 8, 20, 4), (1, 8, 20, 4)]),
    ("einsum_path", "ij,jk,kl->il", [(2, 2), (2, 5), (5, 2)]),
    ("einsum_path_greedy", "ea,fb,abcd,gc,hd->efgh", [(4, 4), (4, 4), (4, 4, 4, 4), (4, 4), (4, 4)]),
    ("kpmurphy", "ntk,kd,dc->nc", [(2, 6, 5), (5, 4), (4, 3)]),
    ("contraction_broadcasting", "cij,cjk->cik", [(3, 4, 5), (3, 1, 6)]),
    ("batch_broadcasting", "cij,cjk->cik", [(1, 4, 5), (3, 5, 6)]),
    ("batch_and_contraction_broadcasting", "cij,cjk->cik", [(1, 4, 5), (3, 1, 6)]),
    ("broadcasting_issue_2189", "...ij,...j", [(2, 1, 3, 3), (2, 4, 3)]),
    ("no_unnecessary_transpose", "ijk,kl->ijl", [(2, 2, 2), (2, 2)]),
    ("preferred_element_type", "ij,j->i", [(2, 2), (2,)]),
    ("mixed_precision", "a,a->a", [(10,), (10,)]),
    ("opt_mode_1", "i->", [(3,)]),
    ("opt_mode_2", "ii->i", [(4, 4)]),
    ("opt_mode_3", "ij,jk", [(3, 4), (4, 3)]),
    ("opt_mode_4", "ij,jkl,klm", [(2, 2), (2, 3, 4), (3, 4, 2)]),
    ("unsupported_optimization", "ij,ik,il->jkl", [(2, 3), (2, 4), (2, 5)]),
]
for name, spec, shapes in J:
    ein(JAX + " test_" + name, "jax_" + name, spec, shapes)
# test_from_dask (dims cycle 2, 3, 4 over the letters in order; "..." is "01")
DASK = ["abc,bad->abcd", "abcdef,bcdfg->abcdeg", "ea,fb,abcd,gc,hd->efgh", "ab,b", "aa", "a,a->", "a,a->a",
        "a,a", "a,b", "a,b,c", "a", "ba,b", "ba,b->", "defab,fedbc->defac", "ab...,bc...->ac...", "a...a",
        "abc...->cba...", "...ab->...a", "a...a->a...", "...abc,...abcd->...d", "ab...,b->ab...", "aa->a",
        "ab,ab,c->c", "aab,bc->ac", "aab,bcc->ac", "fdf,cdd,ccd,afe->ae", "fff,fae,bef,def->abd"]
for k, spec in enumerate(DASK):
    dims = cycle([2, 3, 4])
    sizes = defaultdict(lambda: next(dims))
    inputs = spec.split("->")[0].split(",")
    shapes = [tuple(sizes[c] for c in t.replace("...", "01")) for t in inputs]
    ein(JAX + " test_from_dask '%s'" % spec, "jax_dask_%d" % k, spec, shapes)
# test_inf_nan: the diagonal of a block holding inf (no 0 * inf from the diagonal's mask)
ein(JAX + " test_inf_nan", "jax_inf_nan", "baa->ba", None, grad=False,
    vals=[[[[np.inf, np.inf], [1.0, 1.0]]]])
ein(JAX + " test_inf_nan (a trace, and -inf/nan off the diagonal)", "jax_inf_nan_trace", "baa->b", None,
    grad=False, vals=[[[[np.inf, -np.inf], [np.nan, 1.0]], [[-np.inf, np.nan], [np.inf, 2.0]]]])

# ---------------------------------------------------------------- TensorFlow
T = [
    # testUnary, testUnaryWithRepeatedLabels
    ("unary_scalar", "->", [()]), ("unary_ab", "ab->", [(3, 3)]), ("unary_ab_ab", "ab->ab", [(3, 3)]),
    ("unary_abc_b", "abc->b", [(3, 4, 5)]), ("unary_abc_ca", "abc->ca", [(3, 4, 5)]),
    ("unary_abc_cab", "abc->cab", [(3, 4, 5)]),
    ("rep_aa", "aa->", [(3, 3)]), ("rep_aa_a", "aa->a", [(3, 3)]), ("rep_aaa", "aaa->", [(3, 3, 3)]),
    ("rep_aaa_a", "aaa->a", [(3, 3, 3)]), ("rep_aab_a", "aab->a", [(3, 3, 4)]),
    ("rep_aabcc_a", "aabcc->a", [(3, 3, 5, 4, 4)]), ("rep_aabcc_ac", "aabcc->ac", [(3, 3, 5, 4, 4)]),
    ("rep_aabcd_ad", "aabcd->ad", [(3, 3, 5, 4, 4)]),
    # testUnaryEllipsis
    ("ell_scalar", "...->...", [()]), ("ell_scalar_sum", "...->", [()]),
    ("ell_dask_1", "a...a->a...", [(2, 2)]), ("ell_dask_2", "a...a->", [(2, 2)]),
    ("ell_dask_3", "a...a->...", [(2, 5, 1, 2)]), ("ell_dask_4", "a...a->a...", [(2, 1, 2)]),
    ("ell_dask_5", "a...a->a...", [(2, 3, 4, 5, 2)]),
    ("ell_ijk_1", "...ijk->...ki", [(3, 4, 5)]), ("ell_ijk_2", "...ijk->...ki", [(1, 3, 4, 5)]),
    ("ell_ijk_3", "...ijk->...ki", [(2, 2, 3, 4, 5)]), ("ell_iii", "i...ii->...i", [(3, 2, 3, 3)]),
    # testBinarySimple, testReducedIndices, testRepeatedIndices
    ("bin_scalars", ",->", [(), ()]), ("bin_a_a", "a,a->", [(3,), (3,)]), ("bin_a_a_a", "a,a->a", [(3,), (3,)]),
    ("bin_ab_b", "ab,b->a", [(3, 4), (4,)]), ("bin_ab_ab", "ab,ab->", [(3, 4), (3, 4)]),
    ("bin_ab_bc", "ab,bc->ac", [(3, 4), (4, 5)]), ("bin_nij", "nij,jk->nik", [(5, 2, 3), (3, 4)]),
    ("bin_abc_bad", "abc,bad->abcd", [(1, 2, 3), (2, 1, 4)]), ("bin_sa", "sa,shb->shab", [(2, 1), (2, 3, 4)]),
    ("red_ba_b", "ba,b->", [(3, 2), (3,)]), ("red_abce", "abce,badf->abcd", [(1, 2, 3, 4), (2, 1, 4, 3)]),
    ("red_ijkm", "ijkm,ijln->ijmn", [(2, 3, 3, 4), (2, 3, 3, 2)]),
    ("rep_ijj", "ijj,k->ik", [(2, 3, 3), (4,)]), ("rep_aba", "aba,a->b", [(3, 4, 3), (3,)]),
    ("rep_ill", "ill,k->ik", [(2, 3, 3), (4,)]),
    ("rep_aab_bc", "aab,bc->ac", [(2, 2, 3), (3, 4)]), ("rep_aab_bcc", "aab,bcc->ac", [(2, 2, 3), (3, 4, 4)]),
    ("rep_aab_11", "aab,bc->ac", [(1, 1, 3), (3, 4)]),
    # testEllipsis
    ("ell_bmm", "...mk,...kn->...mn", [(5, 1, 2, 3), (5, 1, 3, 4)]),
    ("ell_bmm_empty", "...mk,...kn->...mn", [(2, 3), (3, 4)]),
    ("ell_transpose", "...ija,aijb...->ba...ij", [(1, 2, 2, 3, 1), (1, 2, 3, 4, 1, 2)]),
    ("ell_omit_1", "...mk,...kn->mn", [(2, 3), (3, 4)]), ("ell_omit_2", "...mk,kn->mn", [(2, 3), (3, 4)]),
    ("ell_omit_3", "mk,...kn->mn", [(2, 3), (3, 4)]),
    # testBroadcasting
    ("bc_1", "...ij,...jk->...ik", [(1, 2, 3), (3, 5)]), ("bc_2", "...ij,...jk->...ik", [(2, 3), (1, 3, 5)]),
    ("bc_3", "...ij,...jk->...ik", [(5, 2, 3), (3, 5)]), ("bc_4", "...ij,...jk->...ik", [(2, 3), (5, 3, 5)]),
    ("bc_5", "...ij,...jk->...ik", [(3, 1, 2, 3), (1, 1, 7, 3, 5)]),
    ("bc_6", "i...j,j...k->...ik", [(2, 1, 3, 1, 3), (3, 1, 7, 5)]),
    ("bc_7", "...abc,...abcd->...d", [(1, 1, 2, 3, 4), (5, 2, 3, 4, 6)]),
    ("bc_8", "ab...,b->ab...", [(2, 3, 1, 1, 5), (3,)]),
    ("bc_9", "i...j,j...k->i...k", [(3, 1, 2, 2), (2, 2, 3, 1, 4)]),
    ("bc_grad_1", "...ij,...jk->...ik", [(3, 2), (2, 4)]),
    ("bc_grad_2", "ij...,jk...->ik...", [(3, 2, 1), (2, 4)]),
    ("bc_grad_3", "...ij,...jk->...ik", [(3, 1, 3, 2), (1, 5, 2, 4)]),
    # testBroadcastingWithRepeatedIndices
    ("bcrep_1", "ij,jk...k->i...", [(3, 2), (2, 4, 1, 4)]),
    ("bcrep_2", "ij,jk...k->...i", [(3, 2), (2, 4, 5, 4)]),
    ("bcrep_3", "ijj,jk...k->i...", [(3, 2, 2), (2, 4, 1, 4)]),
    ("bcrep_4", "i...jj,jk...k->i...", [(3, 3, 1, 2, 2), (2, 4, 1, 5, 4)]),
    ("bcrep_grad", "aab,b...c->a...c", [(1, 1, 3), (3, 1, 1, 4)]),
    # testDtypes (float32 and float64 here), testOutputRepeatedLabels, EinsumGradTest
    ("dtypes", "ij,jk->ik", [(2, 2), (2, 2)]),
    ("out_rep_a_aa", "a->aa", [(2,)]),
    ("grad_aabcd_add", "aabcd->add", [(3, 3, 5, 4, 4)]),
    ("grad_abcd_da", "abcd->da", [(3, 5, 4, 2)]),
    ("grad_ab_cd_da", "ab...cd->da...", [(3, 5, 2, 3, 4, 2)]),
    ("grad_bcba", "abce,badf->bcba", [(1, 2, 3, 4), (2, 1, 4, 3)]),
    # EinsumBenchmark's equations, at small sizes
    ("bench_ijk_i", "ijk->i", [(4, 4, 4)]), ("bench_ijk_kji", "ijk->kji", [(4, 4, 4)]),
    ("bench_ji_kj", "ji,kj->ik", [(5, 5), (5, 5)]), ("bench_ab_ba", "ab,ba->", [(4, 4), (4, 4)]),
    ("bench_abc_abc", "abc,abc->", [(3, 3, 3), (3, 3, 3)]), ("bench_abc_bac", "abc,bac->", [(3, 3, 3), (3, 3, 3)]),
    ("bench_abc_cba", "abc,cba->", [(3, 3, 3), (3, 3, 3)]), ("bench_bij", "bij,bjk->bik", [(3, 3, 3), (3, 3, 3)]),
    ("bench_bji", "bji,bjk->bki", [(3, 3, 3), (3, 3, 3)]), ("bench_ikl", "ikl,kji->kl", [(3, 3, 3), (3, 3, 3)]),
    ("bench_klj", "klj,lki->ij", [(3, 3, 3), (3, 3, 3)]), ("bench_ijk_ilj", "ijk,ilj->kli", [(3, 3, 3), (3, 3, 3)]),
    ("bench_kij", "kij,mkb->ijmb", [(3, 3, 3), (3, 3, 3)]), ("bench_abcd_ad", "abcd,ad->bc", [(3, 3, 3, 3), (3, 3)]),
    ("bench_ijk_jklm", "ijk,jklm->il", [(3, 3, 3), (3, 3, 3, 3)]),
    ("bench_efabc", "efabc,eabcd->efd", [(3,) * 5, (3,) * 5]), ("bench_fabec", "fabec,abcde->fde", [(3,) * 5, (3,) * 5]),
    ("bench_efabc2", "efabc,edabc->efd", [(3,) * 5, (3,) * 5]),
    ("bench_eadbf", "eadbf,dfebc->ecfad", [(3,) * 5, (3,) * 5]),
    ("bench_abcdef", "abcdef,bcdfg->abcdeg", [(2, 3, 2, 3, 2, 3), (3, 2, 3, 3, 2)]),
]
for name, spec, shapes in T:
    ein(TF + " " + name, "tf_" + name, spec, shapes)
# special_math_ops_test.py EinsumTest: the cases einsum_op_test.py does not have
TS = [
    ("implicit_a", "a", [(3,)]), ("implicit_aa", "aa", [(3, 3)]), ("empty_spec", "", [()]),
    ("batch_transpose", "...ij->...ji", [(5, 2, 3)]), ("batch_sum", "...ij->...", [(5, 2, 3)]),
    ("i_ell_i", "i...i->...", [(2, 5, 1, 2)]), ("hadamard", "...,...->...", [(2, 3), (2, 3)]),
    ("outer", "...i,...j->...ij", [(5, 2), (5, 3)]), ("implicit_ab_b", "ab,b", [(3, 4), (4,)]),
    ("implicit_cab_b", "cab,b", [(1, 3, 4), (4,)]),
]
for name, spec, shapes in TS:
    ein(TFS + " " + name, "tfs_" + name, spec, shapes)

# testEmpty, testEmptyWithRepeatedLabels, EinsumGradTest.testEmpty*: zero-sized axes (tdsl(7)
# Empty tensors: a sum over an empty axis is 0 and passes no gradient)
E = [
    ("empty_contract", "ab,bc->ac", [(0, 10), (10, 10)]),
    ("empty_transformer_xl", "ibnd,ijbn->jnd", [(1, 0, 5, 10), (1, 1, 0, 5)]),
    ("empty_trace", "aab,bc->ac", [(0, 0, 10), (10, 10)]),
    ("empty_trace3", "aaab,bc->c", [(0, 0, 0, 3), (3, 4)]),
    ("empty_diag_aaca", "ab,bc->aaca", [(0, 10), (10, 5)]),
    ("empty_diag_aaa", "ab,bc->aaa", [(0, 10), (10, 5)]),
    ("empty_diag_cc", "ab,bc->cc", [(0, 10), (10, 5)]),
    ("empty_ab_aaa", "ab,ab->aaa", [(0, 5), (0, 5)]),
    ("empty_grad_b", "aab,bc->ac", [(1, 1, 0), (0, 10)]),
]
for name, spec, shapes in E:
    ein(TF + " testEmpty* " + name, "tf_" + name, spec, shapes)

# testPlaceholder: operands of unknown shape; in tdsl, dynamic dimensions (?) set by the
# loaded arrays
ein(TF + " testPlaceholder (partly unknown)", "tf_placeholder_1", "bijl,bjkm->bik", [(9, 2, 3, 5), (9, 3, 4, 7)],
    dyn=[(0, 1, 2), (0, 1, 3)])
ein(TF + " testPlaceholder (all unknown)", "tf_placeholder_2", "bijl,bjkm->bik", [(9, 2, 3, 5), (9, 3, 4, 7)],
    dyn=[(0, 1, 2, 3), (0, 1, 2, 3)])
ein(TF + " testPlaceholder (ellipsis)", "tf_placeholder_3", "...ij,...->...i", [(4, 3, 1, 2), (4, 3)],
    dyn=[(0, 2), (0,)])
ein(TF + " testPlaceholder (broadcast batch)", "tf_placeholder_4", "...ij,...jk->...ik", [(3, 1, 2, 3), (1, 7, 3, 4)],
    dyn=[(0, 1, 2, 3), (0, 1, 2, 3)])

# testInvalid's last case: tdsl sums the ellipsis axes the result leaves out
ein(TF + " testInvalid ('...ij,...jk->ik' over a batch of 2)", "tf_invalid_sum_ellipsis",
    "...ij,...jk->ik", [(2, 2, 3), (3, 4)],
    differs="a row variable missing from the result is reduced like any axis (tdsl(7) Axes); TensorFlow refuses")

# testInvalid's '...ij,jk->ik' with a rank-1 operand: an argument row may have fewer axes
# than the spec names (row polymorphism: what it lacks broadcasts), so i is a size-1 axis
S.case("tensorflow", "tf_invalid_ellipsis_rank", TF + " testInvalid ('...ij,jk->ik' with a rank-1 operand)",
       [(3,), (3, 4)], '$0 +* "...ij; jk => ik" $1', lambda a, b: torch.einsum("ij,jk->ik", a.reshape(1, 3), b),
       differs="an argument with fewer axes than its spec row broadcasts the missing ones (tdsl(7) SHAPES AND "
       "INFERENCE); TensorFlow refuses")

# ---------------------------------------------------------------- CuPy
CU = "cupy tests/cupy_tests/linalg_tests/test_einsum.py"
CUPY = [
    # TestEinSumUnaryOperation
    ("u_ij", "ij", [(2, 3)]), ("u_ell", "...", [(2, 3)]), ("u_ji", "ji", [(2, 3)]), ("u_ii_i", "ii->i", [(3, 3)]),
    ("u_jii_ij", "jii->ij", [(3, 3, 3)]), ("u_iji_ij", "iji->ij", [(3, 3, 3)]),
    ("u_ell_ii", "...ii->...i", [(3, 3, 3)]), ("u_iii_i", "iii->i", [(3, 3, 3)]),
    ("u_ijk_jik", "ijk->jik", [(2, 3, 4)]), ("u_ijk_kij", "ijk->kij", [(2, 3, 4)]),
    ("u_ijk_ikj", "ijk->ikj", [(2, 3, 4)]), ("u_kji_ikj", "kji->ikj", [(2, 3, 4)]),
    ("u_j_ell_i", "j...i->i...j", [(2, 3, 4)]), ("u_i_sum", "i->", [(3,)]), ("u_ii", "ii", [(3, 3)]),
    ("u_ijkj", "ijkj->kij", [(2, 2, 2, 2)]), ("u_ijij", "ijij->ij", [(2, 2, 2, 2)]),
    ("u_jiji", "jiji->ij", [(2, 2, 2, 2)]), ("u_ii_ell", "ii...->...", [(2, 2, 2, 2)]),
    ("u_i_ell_i", "i...i->...", [(2, 2, 2, 2)]), ("u_ell_ii_sum", "...ii->...", [(2, 2, 2, 2)]),
    ("u_j_ell_i_sum", "j...i->...", [(2, 2, 2, 2)]),
    # TestEinSumBinaryOperation
    ("b_outer", "i,j", [(2,), (3,)]), ("b_matvec", "ij,j", [(2, 3), (3,)]), ("b_matvec_t", "ij,i", [(2, 3), (2,)]),
    ("b_matmat", "ij,jk", [(2, 3), (3, 4)]), ("b_tensordot", "ijk, jil -> kl", [(3, 4, 2), (4, 3, 2)]),
    ("b_ell_ki", "i...,...k->ki...", [(3, 4, 2), (4, 2, 3)]), ("b_ell_ji", "ij...,ji...->i...", [(3, 4, 2), (4, 3, 2)]),
    ("b_ijil", "ijil,jkk->kj", [(2, 3, 2, 4), (3, 2, 2)]), ("b_i_ell_ij", "i...ij,ji...->...j", [(2, 4, 2, 3), (3, 2, 4)]),
    ("b_bc_1", "ij...,j...->ij...", [(2, 3, 4), (3,)]), ("b_bc_2", "ij...,...j->ij...", [(2, 3, 4), (3,)]),
    ("b_bc_3", "ij...,j->ij...", [(2, 3, 4), (3,)]), ("b_bc_4", "ik...,k...->i...", [(4, 3), (3, 2)]),
    ("b_bc_5", "ik...,...kj->i...j", [(4, 3), (3, 2)]), ("b_bc_6", "...k,kj", [(4, 3), (3, 2)]),
    ("b_bc_7", "ik,k...->i...", [(4, 3), (3, 2)]), ("b_bc_8", "ijkl,k", [(2, 3, 4, 5), (4,)]),
    ("b_bc_9", "...kl,k", [(2, 3, 4, 5), (4,)]), ("b_bc_10", "...kl,k...", [(2, 3, 4, 5), (4,)]),
    ("b_bc_11", "...lmn,lmno->...o", [(1, 1, 1, 2, 3, 4), (2, 3, 4, 2)]),
    # TestEinSumBinaryOperationWithScalar, TestEinSumTernaryOperation
    ("scalar_1", ",i->", [(), (2,)]), ("scalar_2", "i,->", [(2,), ()]),
    ("t_chain", "ij,jk,kl", [(2, 3), (3, 4), (4, 5)]), ("t_ijk", "ij,ik,i->ijk", [(2, 4), (2, 3), (2,)]),
    ("t_jk", "ij,ki,i->jk", [(2, 4), (3, 2), (2,)]), ("t_ell", "i...,i,...i->...i", [(2, 3, 4), (2,), (3, 4, 2)]),
]
for name, spec, shapes in CUPY:
    ein(CU + " " + name, "cupy_" + name, spec, shapes)
# test_many_dimension2: 'ij' over a vector; the argument's row may have fewer axes than
# the spec's (broadcasting), so i is a size-1 axis
S.case("cupy", "cupy_many_dimension2", CU + " test_many_dimension2 ('ij' over a vector)", [(2,)],
       '$0 ++ "ij => ij"', lambda a: a.reshape(1, 2),
       differs="an argument with fewer axes than its spec row broadcasts the missing ones (tdsl(7) SHAPES AND "
       "INFERENCE); CuPy refuses")
# test_irregular_ellipsis4: '...->' over a (2,2,2) operand, which CuPy refuses: tdsl sums
ein(CU + " test_irregular_ellipsis4 ('...->')", "cupy_ell_sum", "...->", [(2, 2, 2)],
    differs="a row variable missing from the result is reduced (tdsl(7) Axes); CuPy refuses")

# ---------------------------------------------------------------- refused
# testInvalid's other cases, and "->..." (9.8)
S.error("tf_invalid_rank", TF + " testInvalid: 'ij,jk->ik' with a rank-3 operand",
        'let%op a = { a; o = [ 1; 2; 3 ] }\nlet%op b = { b; o = [ 3; 4 ] }\nlet%op r = a +* "ij; jk => ik" b\n',
        "mismatch", 3)
S.error("tf_invalid_dims", TF + " testInvalid: 'ij,jk->ik' with (2,3) and (4,4)",
        'let%op a = { a; o = [ 2; 3 ] }\nlet%op b = { b; o = [ 4; 4 ] }\nlet%op r = a +* "ij; jk => ik" b\n',
        "dimension mismatch", 3)
S.error("tf_invalid_broadcast", TF + " testInvalid: '...ij,...jk->...ik' with batches 5 and 7",
        'let%op a = { a; o = [ 5; 2; 3 ] }\nlet%op b = { b; o = [ 7; 3; 4 ] }\nlet%op r = a +* "...ij; ...jk => ...ik" b\n',
        "dimension mismatch", 3)
X1 = 'let%op a = { a; o = [ 2 ] }\n'
X2 = 'let%op a = { a; o = [ 2; 3 ] }\n'
X3 = 'let%op a = { a; o = [ 2; 2; 2 ] }\n'
S.error("cupy_irregular_ellipsis2", CU + " test_irregular_ellipsis2 ('...i...': two row variables)",
        X3 + 'let%op r = a ++ "...i... => i"\n', "second row variable", 2)
S.error("cupy_irregular_ellipsis3", CU + " test_irregular_ellipsis3 ('i...->...i...')",
        X3 + 'let%op r = a ++ "i... => ...i..."\n', "second row variable", 2)
S.error("cupy_too_many_operands", CU + " test_too_many_operands2 ('i,j' with three operands)",
        X1 + 'let%op r = (a +* "i; j => ij" a) +* "ij => ij" a\n', "argument", 2)
S.error("cupy_too_few_dimension", CU + " test_too_few_dimension ('i->i' over a matrix)",
        X2 + 'let%op r = a ++ "i => i"\n', "mismatch", 2)
S.error("cupy_invalid_char", CU + " test_invalid_char1 ('i%')",
        X1 + 'let%op r = a ++ "i% => i"\n', "unexpected character", 2)
S.error("cupy_invalid_output", CU + " test_invalid_output_subscripts1 ('i->ij': j in no argument, 9.13)",
        X1 + 'let%op r = a ++ "i => ij"\n', "occurs in no argument", 2)
S.error("cupy_invalid_diagonal", CU + " test_invalid_diagonal1 ('ii' over a 2x3 matrix)",
        X2 + 'let%op r = a ++ "ii => i"\n', "dimension mismatch", 2)
S.error("cupy_invalid_arrow", CU + " test_invalid_arrow3 ('i->->i')",
        X1 + 'let%op r = a ++ "i => => i"\n', "one '=>'", 2)
S.error("tf_result_only_ellipsis", TF + " testUnaryEllipsis '->...' (LANGUAGE.md 9.8)",
        'let%op a = { a; o = [ ] }\nlet%op r = a ++ " => ..."\n', "row variable", 2)

sys.exit(S.main())
