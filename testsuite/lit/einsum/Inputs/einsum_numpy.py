"""numpy's and opt_einsum's einsum cases run through tdslc, numpy.einsum (float64) as the
oracle, and torch.einsum autograd for the gradients of a subset.

Usage: einsum_numpy.py TDSLC WORKDIR [--filter S] [--list] [--no-grad] [--no-check] [--cuda]

A numpy spec "ij,jk->ik" becomes the tdsl spec "ij;jk=>ik" (output axes only); three or
more operands become a chain of binary einsums whose intermediates keep the indices a
later operand or the result still needs. Every case runs in several variants:
  f32     single precision, output axes only
  f64     --precision=double
  kinds   each operand's (and the result's) axes split, in order, into batch, output and
          input rows ("B|I->O"), which keeps numpy's element order in memory; a leading
          ellipsis goes to the batch row ("...|ij")
  multi   multi-character mode: each letter becomes an identifier ("adim, bdim")
  cd      the last einsum as a %cd assignment: { r; o = [..] } =:+ x * y ~logic:"SPEC"
  check   tdslc --check -O3 (optimized vs naive code) on the f32 program
  grad    (subset) parameters, loss = sum(r * w), grad_update, against torch autograd
With --cuda, only the variants through the CUDA backend, emulated on the host (the
--emit-cuda source compiled as C with testsuite/cuda/shim.h, TDSL_CUDA_EMULATE):
  cuda       as f32
  cuda-tf32  as f32 with --tf32: within 2e-3 of the einsum of absolute values (the chains
             round their intermediates to TF32 again)
  cuda-grad-f64  as grad-f64 (double precision)
All cases of a variant go into one program (one compile); when that fails, each case runs
alone so the failing ones are named. Prints PASS/FAIL per case and variant, then ALL-OK
or the number of failures (exit 1)."""
import json
import os
import subprocess
import sys
import zlib

import numpy as np

args = [a for a in sys.argv[1:] if not a.startswith("--")]
flags = [a for a in sys.argv[1:] if a.startswith("--")]
tdslc, work = args[0], args[1]
filt = None
for i, a in enumerate(sys.argv):
    if a == "--filter":
        filt = sys.argv[i + 1]
os.makedirs(work, exist_ok=True)

# numpy's test sizes for letters (test_einsum.py global_size_dict, extended)
SIZES = dict(zip("abcdefghijklmnopqrstuvwxyz", [2, 3, 4, 5, 4, 3, 2, 6, 5, 4, 3, 2, 3, 4, 2, 3, 4, 2, 3, 2, 3, 2, 3, 2, 3, 2]))

CASES = []  # (name, numpy spec, shapes or None, grad?)
SAME = set()  # cases whose operands are all one tensor


def case(name, spec, shapes=None, grad=False, same=False):
    CASES.append((name, spec, shapes, grad))
    if same:
        SAME.add(name)


# ---- numpy test_einsum.py: views (transpose, diagonals, swap axes) ----
case("view_ident", "ij", [(2, 3)])
case("view_ellipsis", "...", [(2, 3)])
case("view_transpose", "ji", [(2, 3)], grad=True)
case("view_diag", "ii->i", [(3, 3)], grad=True)
case("view_diag_bcast", "...ii->...i", [(3, 3, 3)], grad=True)
case("view_diag_lead", "ii...->...i", [(3, 3, 3)])
case("view_diag_perm", "...ii->i...", [(3, 3, 3)])
case("view_jii", "jii->ij", [(3, 3, 3)], grad=True)
case("view_ii_lead", "ii...->i...", [(3, 3, 3)])
case("view_i_mid_i", "i...i->i...", [(3, 3, 3)])
case("view_i_mid_i2", "i...i->...i", [(3, 3, 3)])
case("view_triple_diag", "iii->i", [(3, 3, 3)], grad=True)
case("view_swap", "ijk->jik", [(2, 3, 4)])
# ---- check_einsum_sums ----
for n in (1, 2, 5, 16):
    case("sum_i_%d" % n, "i->", [(n,)])
    case("sum_last_%d" % n, "...i->...", [(2, 3, n)])
    case("sum_first_%d" % n, "i...->...", [(2, n)])
    case("sum_first3_%d" % n, "i...->...", [(2, 3, n)])
    case("trace_%d" % n, "ii", [(n, n)])
    case("mul_ell_%d" % n, "...,...", [(3, n), (2, 3, n)])
    case("inner_%d" % n, "...i,...i", [(2, 3, n), (n,)])
    case("inner_lead_%d" % n, "i...,i...", [(n, 3, 2), (n,)])
    case("outer_%d" % n, "i,j", [(3,), (n,)])
    case("matvec_%d" % n, "ij,j", [(4, n), (n,)])
    case("matvec_t_%d" % n, "ji,j", [(n, 4), (n,)])
    case("matmat_%d" % n, "ij,jk", [(4, n), (n, 6)])
case("sum_scalar_mul", "...,...", [(), ()])
case("matvec_grad", "ij,j", [(4, 3), (3,)], grad=True)
case("matmat_grad", "ij,jk", [(4, 5), (5, 6)], grad=True)
case("triple_product", "ij,jk,kl", [(3, 4), (4, 5), (5, 6)], grad=True)
case("tensordot", "ijk,jil->kl", [(3, 4, 5), (4, 3, 2)], grad=True)
case("and3", "i,i,i->i", [(8,), (8,), (8,)])
case("scalar_first", ",i->", [(), (9,)], grad=True)
case("scalar_second", "i,->", [(9,), ()])
case("scalar_times", "i,->i", [(7,), ()])
case("scalar_times2", ",i->i", [(), (7,)])
case("dot_self", "i,i", [(24,), (24,)])
case("ticket1885", "z,mz,zm->", [(2,), (2, 2), (2, 2)], grad=True)
case("singleton_bcast", "ij,ij->j", [(10, 2), (1, 2)], grad=True)
case("blas_bcast", "i,i", [(2,), (1,)], grad=True)
case("ones_bcast", "...ij,...jk->...ik", [(1, 5), (5, 5)])
case("ones_bcast_pp", "...ij,...jk->...ik", [(1, 5), (1, 5)])
case("gh10899_a", "ji,i->", [(2, 2), (2,)])
case("gh10899_b", "i,ij->", [(2,), (2, 2)])
case("gh10899_c", "ij,i->", [(2, 2), (2,)])
# ---- test_einsum_misc ----
case("misc_bcast_tail", "ij...,j...->i...", [(1, 2), (2, 2, 1)])
case("misc_inner_lists", "...i,...i", [(3,), (3,)])
case("misc_ijklm", "ijklm,ijn,ijn->", [(5, 12, 4, 2, 3), (5, 12, 11), (5, 12, 11)])
case("misc_ijklm2", "ijklm,ijn->", [(5, 12, 4, 2, 3), (5, 12, 11)])
case("misc_xzy", "x,yx,zx->xzy", [(2,), (2, 2), (4, 2)], grad=True)
case("misc_out_none", "i,j", [(1,), (1,)])
# ---- test_einsum_broadcast ----
case("bcast_ref", "ijk,j->ijk", [(2, 3, 4), (3,)])
case("bcast_1", "ij...,j...->ij...", [(2, 3, 4), (3,)])
case("bcast_2", "ij...,...j->ij...", [(2, 3, 4), (3,)])
case("bcast_3", "ij...,j->ij...", [(2, 3, 4), (3,)])
case("bcast_4", "ik...,k...->i...", [(4, 3), (3, 2)])
case("bcast_5", "ik...,...kj->i...j", [(4, 3), (3, 2)])
case("bcast_6", "...k,kj", [(4, 3), (3, 2)], grad=True)
case("bcast_7", "ik,k...->i...", [(4, 3), (3, 2)])
case("bcast_8", "ijkl,k", [(2, 3, 4, 5), (4,)])
case("bcast_9", "...kl,k", [(2, 3, 4, 5), (4,)])
case("bcast_10", "...kl,k...", [(2, 3, 4, 5), (4,)])
case("bcast_11", "...lmn,lmno->...o", [(1, 1, 1, 6, 5, 4), (6, 5, 4, 3)], grad=True)
case("bcast_30349", "i...->i", [(3, 3, 3)])
for k, s in enumerate(["...i->i", "ij...->i", "ij...->ij", "...ij->i", "...ij->ij", "i...j->i",
                       "i...j->ij", "ijk->i", "ijk->ij", "ijk->ijk"]):
    case("ell1_%d" % k, s, [(3, 3, 3)])
for k, s in enumerate(["ij...,i...->i", "j...,i...->j", "j...,i...->", "ijk,jk...->",
                       "ijk,k...->i", "ijk,klm->k", "ijk,jkl->ik"]):
    case("ell2_%d" % k, s, [(3, 3, 3), (3, 3, 3)])
case("fixedstride", "cl,cpx->lpx", [(2, 3), (2, 3, 2731)])
case("fixedstride2", "cl,cpxy->lpxy", [(3, 3), (3, 3, 16, 16)])
case("collapse_aabb", "aabb->ab", [(5, 5, 5, 5)], grad=True)
case("ijij", "ijij->", [(4, 5, 4, 5)])
case("paths_7", "i,i,i->", [(5,), (5,), (5,)])
case("paths_8", "i,i,i,i->", [(5,), (5,), (5,), (5,)])
case("contig_out", "mi,mi,mi->m", [(5, 5), (5, 5), (5, 5)])
case("contig_out2", "im,im,im->m", [(5, 5), (5, 5), (5, 5)])
case("combined_views", "bbcdc->d", [(1, 1, 3, 1, 3)])
case("bcast_dot_1", "ijk,kl,jl", [(1, 5, 4), (4, 6), (5, 6)])
case("bcast_dot_2", "ijk,kl,jl,i->i", [(1, 5, 4), (4, 6), (5, 6), (10,)], grad=True)
case("bcast_dot_3", "abjk,kl,jl", [(1, 1, 5, 4), (4, 6), (5, 6)])
case("bcast_dot_4", "abjk,kl,jl,ab->ab", [(1, 1, 5, 4), (4, 6), (5, 6), (7, 7)])
case("bcast_dot_5", "obk,ijk->ioj", [(2, 4, 8), (2, 4, 8)])
case("bcast_dot_6", "ajk,kbl,jl,ab->ab", [(1, 5, 4), (4, 1, 6), (5, 6), (7, 7)])
case("singleton_1", "ijp,ipq,ikq->ijk", [(3, 1, 1), (3, 1, 3), (1, 3, 3)], grad=True)
case("singleton_2", "jhcabhijaci,dfijejgh->fgje", [(1, 1, 1, 1, 3, 1, 1, 1, 1, 1, 1), (3, 1, 3, 1, 1, 1, 1, 2)])
case("singleton_3", "baegffahgc,hdggeff->dhg", [(2, 1, 4, 1, 1, 1, 1, 2, 1, 1), (1, 1, 1, 1, 4, 1, 1)])
case("singleton_4", "cehgbaifff,fhhdegih->cdghbi", [(1,) * 10, (2, 1, 1, 2, 4, 1, 1, 1)])
case("singleton_5", "gah,cdbcghefg->ef", [(2, 3, 1), (1, 3, 1, 1, 1, 2, 1, 4, 1)])
case("singleton_6", "cacc,bcb->", [(1, 1, 1, 1), (1, 4, 1)])
case("internal_trace", "cab,cdd->ab")
case("spaces", " ... a -> ... a ", [(1, 1)])
case("empty_spec", "->", [()])
case("can_blas_healed", "ab,bc,bd->acd", [(5, 4), (1, 5), (4, 20)])
# ---- optimize_compare / opt_einsum test_contract.py (sizes from the letters) ----
OPT = ["a,ab,abc->abc", "a,b,ab->ab", "ea,fb,gc,hd,abcd->efgh", "ea,fb,abcd,gc,hd->efgh",
       "abcd,ea,fb,gc,hd->efgh", "acdf,jbje,gihb,hfac,gfac,gifabc,hfac",
       "cd,bdhe,aidb,hgca,gc,hgibcd,hgac", "abhe,hidj,jgba,hiab,gab",
       "bde,cdh,agdb,hica,ibd,hgicd,hiac", "chd,bde,agbc,hiad,hgc,hgi,hiad",
       "chd,bde,agbc,hiad,bdi,cgh,agdb", "bdhe,acad,hiab,agac,hibd",
       "ab,ab,c->", "ab,ab,c->c", "ab,ab,cd,cd->", "ab,ab,cd,cd->ac", "ab,ab,cd,cd->cd",
       "ab,ab,cd,cd,ef,ef->", "ab,cd,ef->abcdef", "ab,cd,ef->acdf", "ab,cd,de->abcde",
       "ab,cd,de->be", "ab,bcd,cd->abcd", "ab,bcd,cd->abd", "eb,cb,fb->cef",
       "dd,fb,be,cdb->cef", "bca,cdb,dbf,afc->", "dcc,fce,ea,dbf->ab", "fdf,cdd,ccd,afe->ae",
       "abcd,ad", "ed,fcd,ff,bcf->be", "baa,dcf,af,cde->be", "bd,db,eac->ace",
       "fff,fae,bef,def->abd", "efc,dbc,acf,fd->abe", "ba,ac,da->bcd",
       "ab,ab", "ab,ba", "abc,abc", "abc,bac", "abc,cba",
       "ab,bc", "ab,cb", "ba,bc", "ba,cb", "abcd,cd", "abcd,ab", "abcd,cdef",
       "abcd,cdef->feba", "abcd,efdc", "aab,bc->ac", "ab,bcc->ac", "aab,bcc->ac",
       "baa,bcc->ac", "aab,ccb->ac", "aab,fa,df,ecc->bde", "ecb,fef,bad,ed->ac",
       "bcf,bbb,fbf,fc->", "bb,ff,be->e", "bcb,bb,fc,fff->", "fbb,dfd,fc,fc->",
       "afd,ba,cc,dc->bf", "adb,bc,fa,cfc->d", "bbd,bda,fc,db->acf", "dba,ead,cad->bce",
       "aef,fbc,dca->bde", "hbc,bdef,cdkj,ji,ikeh,lfo", "ijab,acd,bce,df,ef->ji",
       "ab,cd,ad,cb", "ab,bc,cd", "a,ac,ab,ad,cd,bd,bc->"]
GRAD_OPT = {"a,ab,abc->abc", "abcd,cdef->feba", "aab,bcc->ac", "bd,db,eac->ace",
            "ab,ab,cd,cd->ac", "fff,fae,bef,def->abd"}
for k, s in enumerate(OPT):
    case("opt_%d" % k, s, None, s in GRAD_OPT)
# opt_einsum test_input.py (ellipsis stands for "ij")
for k, s in enumerate(["...a->...", "a...->...", "a...a->...a", "...,...", "a,b", "...a,...b",
                       "...a", "...a->...a", "...b,...a->..."]):
    shapes = [tuple(SIZES[c] for c in t.replace("...", "ij")) for t in s.split("->")[0].split(",")]
    case("input_%d" % k, s, shapes)
case("sublist_transpose", "ba", [(2, 3)])
# ---- size-1 broadcasting beyond the ported cases ----
case("bcast1_both", "ij,ij->ij", [(1, 2), (3, 1)], grad=True)
case("bcast1_contracted", "ij,jk->ik", [(2, 1), (3, 4)], grad=True)
case("bcast1_ell", "...i,...i->...", [(3, 1, 4), (1, 2, 4)], grad=True)
case("bcast1_trace", "ii", [(1, 1)])
case("bcast1_outer_ell", "...,...->...", [(2, 1, 3), (4, 1)])
case("diag_extra", "iij->j", [(3, 3, 4)], grad=True)
case("diag_extra2", "iij->ij", [(3, 3, 4)])
case("diag_two_ops", "ii,ii->i", [(4, 4), (4, 4)], grad=True)
case("diag_mixed", "iij,jk->ik", [(3, 3, 2), (2, 5)], grad=True)
case("upper", "Ab,bC->AC", [(2, 3), (3, 4)])
case("upper_implicit", "Ba,aC", [(2, 3), (3, 4)])
# ---- tdsl only: a letter repeated in the result writes a diagonal (numpy refuses) ----
case("ext_diag_embed", "i->ii", [(4,)], grad=True)
case("ext_jij", "ij->jij", [(2, 3)], grad=True)
case("ext_ii_sum", "ij->ii", [(2, 3)], grad=True)
case("ext_keep_diag", "ii->ii", [(3, 3)], grad=True)
case("ext_outer_diag", "i,j->iji", [(3,), (2,)], grad=True)
case("ext_matmul_diag", "ij,jk->iki", [(3, 4), (4, 2)], grad=True)
case("ext_ell_diag", "...i->...ii", [(2, 3)], grad=True)
# ---- sizes past the tiling and vectorization thresholds ----
case("big_transpose", "ij->ji", [(37, 53)], grad=True)
case("big_transpose3", "ijk->kji", [(19, 7, 33)])
case("big_matmul", "ij,jk->ik", [(33, 65), (65, 47)], grad=True)
case("big_matmul_t", "ji,kj->ik", [(65, 33), (47, 65)])
case("big_batched", "bij,bjk->bik", [(3, 17, 18), (3, 18, 19)], grad=True)
case("big_rowsum", "ij->i", [(31, 257)])
case("big_colsum", "ij->j", [(257, 31)])
case("big_sum", "ij->", [(129, 65)])
# ---- one tensor in several operand positions (numpy passes x twice) ----
case("same_matmul", "ij,jk->ik", [(4, 4), (4, 4)], grad=True, same=True)
case("same_dot", "i,i", [(5,), (5,)], grad=True, same=True)
case("same_diag", "ii,ii->i", [(3, 3), (3, 3)], grad=True, same=True)
case("same_transposed", "ij,ji->", [(3, 3), (3, 3)], grad=True, same=True)
case("same_ell2", "ijk,jkl->ik", [(3, 3, 3), (3, 3, 3)], grad=True, same=True)
case("same_outer3", "i,j,k->ijk", [(3,), (3,), (3,)], grad=True, same=True)
# ---- --cuda only: past the CUDA backend's kernel thresholds (backends/cuda), edges that
# are not multiples of the tiles ----
if "--cuda" in sys.argv:
    case("cu_block_rowsum", "ij->i", [(130, 300)])  # one block per cell
    case("cu_block_rowdot", "ij,ij->i", [(131, 257), (131, 257)], grad=True)
    case("cu_strided_rowsum", "ji->i", [(300, 130)])
    case("cu_split_colsum", "ij->j", [(2100, 3)])  # split: partials, then a fold
    case("cu_split_dot", "i,i->", [(5000,), (5000,)], grad=True)
    case("cu_tile_matmul", "ij,jk->ik", [(100, 70), (70, 90)], grad=True)  # 64x64 tiles
    case("cu_tile_matmul_t", "ji,kj->ik", [(70, 97), (66, 70)])
    case("cu_tile_batched", "bij,bkj->bki", [(3, 40, 33), (3, 50, 33)], grad=True)
    case("cu_tile_two_k", "ijk,jkl->il", [(40, 9, 8), (9, 8, 37)])
    case("cu_tile_splitk", "ij,jk->ik", [(65, 1100), (1100, 60)])  # split-K
    case("cu_tile_vec_k", "ij,jk->ik", [(1, 1500), (1500, 1100)])
    case("cu_tile_bcast", "ij,j->ij", [(70, 90), (90,)])


# ---- translation ----
def parse(spec):
    spec = spec.replace(" ", "")
    if "->" in spec:
        lhs, out = spec.split("->")
    else:
        lhs = spec
        letters = [c for c in lhs if c.isalpha()]
        singles = sorted(c for c in set(letters) if letters.count(c) == 1)
        out = ("..." if "..." in lhs else "") + "".join(singles)
    return lhs.split(","), out


def toks(term):
    """A numpy term as a list of axis tokens: letters and '...'."""
    r, i = [], 0
    while i < len(term):
        if term.startswith("...", i):
            r.append("...")
            i += 3
        else:
            r.append(term[i])
            i += 1
    return r


def explicit(spec, shapes):
    """spec with each ellipsis spelled as letters (right-aligned, as numpy broadcasts it)
    and the output explicit: this numpy cannot sum over an ellipsis missing from the
    output, newer ones can."""
    terms, out = parse(spec)
    n = max([len(sh) - (len(toks(t)) - 1) for t, sh in zip(terms, shapes) if "..." in t] or [0])
    ell = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:n]
    ts = []
    for t, sh in zip(terms, shapes):
        if "..." in t:
            k = len(sh) - (len(toks(t)) - 1)
            t = t.replace("...", ell[n - k:])
        ts.append(t)
    return ",".join(ts) + "->" + out.replace("...", ell)


def dedupe(spec):
    """An explicit spec without repeated result letters, and the result's letters: tdsl
    lets a letter repeat in the result (the value goes on that diagonal, the other cells
    stay 0), numpy does not, so the oracle computes the deduplicated result and embeds it."""
    lhs, out = spec.split("->")
    uniq = "".join(c for k, c in enumerate(out) if c not in out[:k])
    return lhs + "->" + uniq, out, uniq


def oracle(spec, ops, f=np.einsum):
    e, out, uniq = dedupe(explicit(spec, [o.shape for o in ops]))
    base = f(e, *ops)
    if out == uniq:
        return base
    size = dict(zip(uniq, base.shape))
    res = np.zeros(tuple(size[c] for c in out))
    for idx in np.ndindex(*base.shape):
        at = dict(zip(uniq, idx))
        res[tuple(at[c] for c in out)] = base[idx]
    return res


def shapes_of(terms, shapes):
    if shapes is not None:
        return shapes
    return [tuple(SIZES[c] for c in t) for t in terms]


def chain(terms, out):
    """Binary steps (left operand tokens, right operand tokens, result tokens)."""
    if len(terms) == 1:
        return [(toks(terms[0]), None, toks(out))]
    steps, cur = [], toks(terms[0])
    for k in range(1, len(terms)):
        right = toks(terms[k])
        if k == len(terms) - 1:
            res = toks(out)
        else:
            later = set(out) | set("".join(terms[k + 1:]))
            res = []
            if "..." in cur + right and ("..." in out or any("..." in t for t in terms[k + 1:])):
                res.append("...")
            for c in cur + right:
                if c != "..." and c in later and c not in res:
                    res.append(c)
        steps.append((cur, right, res))
        cur = res
    return steps


def split_kinds(n, seed):
    """Split n axes (in order) into batch, output, input counts."""
    if n == 0:
        return (0, 0, 0)
    r = np.random.RandomState(seed)
    nb = r.randint(0, n + 1)
    no = r.randint(0, n - nb + 1)
    return (nb, no, n - nb - no)


class Render:
    def __init__(self, variant):
        self.variant = variant

    def name(self, c):
        return c + "dim" if self.variant == "multi" else c

    def row(self, ts):
        names = [self.name(t) if t != "..." else "..." for t in ts]
        return (", " if self.variant == "multi" else "").join(names)

    def term(self, ts, split):
        """Spec of one operand; split = (nb, no, ni) or None (output axes only)."""
        if split is None:
            r = self.row(ts)
            return r + (", " if self.variant == "multi" and len(ts) == 1 else "")
        nb, no, ni = split
        b, o, i = ts[:nb], ts[nb:nb + no], ts[nb + no:]
        s = ""
        if nb:
            s += self.row(b) + "|"
        if ni:
            s += self.row(i) + "->"
        return s + self.row(o)


def kinds_for(ts, seed):
    """(nb, no, ni) for the kinds variant, or None to keep output axes only."""
    if "..." in ts:
        if ts[0] == "..." and ts.count("...") == 1:
            return "lead"
        return None
    return split_kinds(len(ts), seed)


def dims_decl(shape, split):
    def lst(ds):
        return "[ " + "; ".join(str(d) for d in ds) + " ]"
    # every row explicit: an undeclared row would be inferred (a shared row variable
    # can give it axes), where numpy's operand has none
    nb, no, ni = split if split is not None else (0, len(shape), 0)
    return "b = %s; i = %s; o = %s" % (lst(shape[:nb]), lst(shape[nb + no:]), lst(shape[nb:nb + no]))


def resolve_split(ts, shape, k):
    """Concrete (nb, no, ni) for an operand of the kinds variant."""
    s = kinds_for(ts, k)
    if s == "lead":  # the ellipsis axes go to the batch row
        nell = len(shape) - (len(ts) - 1)
        return (nell, len(shape) - nell, 0), ("lead", len(ts) - 1)
    return s, None


def term_spec(rd, ts, split, lead):
    if lead is not None:
        rest = ts[1:]
        return "...|" + (rd.row(rest) if rest else "")
    return rd.term(ts, split if split is not None else None)


class Built:
    pass


def build(name, spec, shapes, variant, grad=False):
    """tdsl source lines, loads {tensor: array}, result tensor, numpy result, operands."""
    terms, out = parse(spec)
    shapes = shapes_of(terms, shapes)
    rng = np.random.RandomState(zlib.crc32(name.encode()))
    ops = [(rng.randint(-16, 17, size=s) / 8.0).astype(np.float64) for s in shapes]
    same = name in SAME
    if same:
        ops = [ops[0]] * len(ops)
    want = oracle(spec, ops)
    rd = Render(variant)
    p = name.replace("-", "_")
    lines, loads = [], {}
    decl = "let%%op %s = { %s; %s }" if grad else "let%%cd %s = { %s; %s }"
    op_spec = []
    for k, (t, a) in enumerate(zip(terms, ops)):
        ts = toks(t)
        split, lead = (None, None)
        if variant == "kinds":
            split, lead = resolve_split(ts, a.shape, 7 if same else k + 7)
            if lead is not None and ("..." in out and not out.startswith("...") or
                                     any("..." in t and not t.startswith("...") for t in terms)):
                split, lead = None, None
        nm = "%s_a%d" % (p, 0 if same else k)
        if not same or k == 0:
            lines.append(decl % (nm, nm, dims_decl(a.shape, split)))
        loads[nm] = a
        op_spec.append(term_spec(rd, ts, split, lead))
    # result kinds: numpy's result order as batch, output, input
    out_ts = toks(out)
    rsplit, rlead = None, None
    if variant == "kinds":
        rsplit, rlead = resolve_split(out_ts, want.shape, 3)
        if rlead is not None and any("..." in t and not t.startswith("...") for t in terms):
            rsplit, rlead = None, None  # an operand's ellipsis is not the batch row's
    res_spec = term_spec(rd, out_ts, rsplit, rlead)
    steps = chain(terms, out)
    cur_name, cur_spec = "%s_a0" % p, op_spec[0]
    for k, (l, r, res) in enumerate(steps):
        last = k == len(steps) - 1
        rs = res_spec if last else rd.term(res, None)
        tn = "%s_r" % p if last else "%s_t%d" % (p, k + 1)
        if last and variant == "cd":
            # the last einsum as a %cd assignment with ~logic into a declared tensor
            rhs = cur_name if r is None else "%s * %s_a%d" % (cur_name, p, 0 if same else k + 1)
            logic = cur_spec if r is None else "%s; %s" % (cur_spec, op_spec[k + 1])
            pre = "".join("%s_t%d.forward; " % (p, j + 1) for j in range(k))
            lines.append('let%%cd %s_run = %s{ %s; %s } =:+ %s ~logic:"%s => %s"'
                         % (p, pre, tn, dims_decl(want.shape, None), rhs, logic, rs))
        elif r is None:
            lines.append('let%%op %s = %s ++ "%s => %s"' % (tn, cur_name, cur_spec, rs))
        else:
            lines.append('let%%op %s = %s +* "%s; %s => %s" %s_a%d'
                         % (tn, cur_name, cur_spec, op_spec[k + 1], rs, p, 0 if same else k + 1))
        cur_name, cur_spec = tn, rs
    b = Built()
    b.lines, b.loads, b.result, b.want, b.ops, b.res_spec = lines, loads, "%s_r" % p, want, ops, res_spec
    b.terms, b.out, b.prefix, b.rsplit = terms, out, p, (rsplit, rlead)
    b.nparams = 1 if same else len(ops)
    return b


CUDA = "--cuda" in flags
SHIM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "cuda", "shim.h")


def run(cmd, env=None):
    try:
        pr = subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)
    except subprocess.TimeoutExpired:
        return 124, "", "timeout"
    return pr.returncode, pr.stdout, pr.stderr


def close(got, want, ops, spec, tol):
    bound = oracle(spec, [np.abs(o) for o in ops])
    err = np.abs(got - want)
    return bool(np.all(err <= tol * bound + tol)), float(np.max(err)) if err.size else 0.0


def write_loads(dirn, loads, dtype=np.float32):
    args = []
    for nm, a in loads.items():
        f = os.path.join(dirn, nm + ".bin")
        np.ascontiguousarray(a, dtype=dtype).tofile(f)
        args += ["--load", "%s=%s" % (nm, f)]
    return args


def write_program(builts, dirn, extra=""):
    """One program holding every built case (then the line extra), and the host inputs
    they load."""
    os.makedirs(dirn, exist_ok=True)
    src = os.path.join(dirn, "m.tdsl")
    with open(src, "w") as f:
        for b in builts:
            f.write("\n".join(b.lines) + "\n")
        f.write(extra)
    loads = {}
    for b in builts:
        loads.update(b.loads)
    return src, loads


def run_values(builts, variant, dirn):
    """Runs one program holding every built case: {case: (values, shape) or error}."""
    src, loads = write_program(builts, dirn)
    cmd = [tdslc, "--run", src] + write_loads(dirn, loads) + ["--json"]
    if variant == "f64":
        cmd.append("--precision=double")
    for b in builts:
        if variant == "cd":
            cmd += ["--call", b.prefix + "_run"]
        cmd += ["--print", b.result]
    if variant.startswith("cuda"):
        ce, err = cuda_cmd(cmd, src, ["--tf32"] if variant == "cuda-tf32" else [])
        if ce is None:
            return None, err
        return run_json(*ce)
    return run_json(cmd)


def cuda_cmd(cmd, src, cflags):
    """The tdslc command through the emulated CUDA backend, and its environment: the
    --emit-cuda source compiled once per program as host C with the shim. None and why
    when that fails."""
    dirn = os.path.dirname(src)
    cu, lib = os.path.join(dirn, "m.cu"), os.path.join(dirn, "emu.so")
    rc, out, err = run([tdslc, "--backend=cuda", "--emit-cuda", src] + cflags)
    if rc != 0:
        return None, "--emit-cuda: exit %d: %s" % (rc, err.strip()[:600])
    with open(cu, "w") as f:
        f.write(out)
    rc, _, err = run(["cc", "-std=c11", "-O1", "-w", "-DTDSL_EMULATE", "-include", SHIM, "-x", "c", cu,
                      "-shared", "-fPIC", "-o", lib, "-lm"])
    if rc != 0:
        return None, "the kernels do not compile as host C: " + err.strip()[:600]
    env = dict(os.environ, TDSL_CUDA_EMULATE=lib)
    return (cmd[:1] + ["--backend=cuda"] + cflags + cmd[1:], env), None


def run_json(cmd, env=None):
    """tdslc's --json lines by name, or None and why it failed."""
    rc, out, err = run(cmd, env)
    if rc != 0:
        return None, "exit %d: %s" % (rc, err.strip()[:600])
    got = {}
    for line in out.splitlines():
        o = json.loads(line)
        got[o["name"]] = o
    return got, None


def check_case(b, o, variant):
    if o is None:
        return False, "no output"
    shape = tuple(o["batch"]) + tuple(o["output"]) + tuple(o["input"])
    if shape != b.want.shape:
        return False, "shape %s, numpy %s" % (shape, b.want.shape)
    got = np.array(o["values"], dtype=np.float64).reshape(b.want.shape)
    tol = {"f64": 1e-12, "cuda-tf32": 2e-3}.get(variant, 2e-6)
    ok, err = close(got, b.want, b.ops, ",".join(b.terms) + "->" + b.out, tol)
    return ok, "max err %.3g" % err


def selected():
    return [c for c in CASES if filt is None or filt in c[0]]


results = []


def report(name, variant, ok, msg):
    results.append(ok)
    print("%s: %s [%s]%s" % ("PASS" if ok else "FAIL", name, variant, "" if ok else " " + msg))
    sys.stdout.flush()


def variant_values(variant):
    builts = []
    for (name, spec, shapes, _) in selected():
        if variant == "multi" and not any(len(toks(t)) > 1 for t in parse(spec)[0] + [parse(spec)[1]]):
            continue
        builts.append(build(name, spec, shapes, variant))
    got, err = run_values(builts, variant, os.path.join(work, variant))
    for b, (name, spec, _, _) in zip(builts, [c for c in selected() if variant != "multi" or
                                             any(len(toks(t)) > 1 for t in parse(c[1])[0] + [parse(c[1])[1]])]):
        if got is None:  # isolate the failing cases
            g1, e1 = run_values([b], variant, os.path.join(work, variant, name))
            if g1 is None:
                report(name, variant, False, "(%s) %s" % (spec, e1))
                continue
            o = g1.get(b.result)
        else:
            o = got.get(b.result)
        ok, msg = check_case(b, o, variant)
        report(name, variant, ok, "(%s) %s" % (spec, msg))


def variant_check():
    builts = [build(n, s, sh, "f32") for (n, s, sh, _) in selected()]

    def one(bs, dirn):
        src, loads = write_program(bs, dirn, "let%cd all_forward = " + "; ".join(b.result + ".forward" for b in bs) + "\n")
        return run([tdslc, "--check", "-O3", src] + write_loads(dirn, loads))

    # groups of 40: the check compares every tensor after every routine
    sel = selected()
    for g in range(0, len(builts), 40):
        rc, out, err = one(builts[g:g + 40], os.path.join(work, "check", "g%d" % g))
        for b, (name, spec, _, _) in zip(builts[g:g + 40], sel[g:g + 40]):
            if rc != 0:
                rc1, _, err1 = one([b], os.path.join(work, "check", name))
                report(name, "check", rc1 == 0, "(%s) exit %d: %s" % (spec, rc1, err1.strip()[:400]))
            else:
                report(name, "check", True, "")


def grad_program(name, spec, shapes, variant):
    """The case's program with parameters, a weighted loss and a grad_update routine."""
    b = build(name, spec, shapes, variant, grad=True)
    rng = np.random.RandomState(5)
    b.w = (rng.randint(-16, 17, size=b.want.shape) / 8.0).astype(np.float64)
    p = b.prefix
    rsplit, rlead = b.rsplit
    if rlead is not None:
        nell = len(b.want.shape) - (len(toks(b.out)) - 1)
        rsplit = (nell, len(b.want.shape) - nell, 0)
    b.lines.append("let%%op %s_w = { %s_w; %s }" % (p, p, dims_decl(b.want.shape, rsplit)))
    b.lines.append('let%%op %s_loss = %s_r +* "%s; %s => " %s_w' % (p, p, b.res_spec, b.res_spec, p))
    b.lines.append("let%%cd %s_step = grad_update %s_loss" % (p, p))
    b.loads["%s_w" % p] = b.w
    return b


def run_grads(bs, dirn):
    src, loads = write_program(bs, dirn)
    cmd = [tdslc, "--run", src, "--precision=double", "--json"] + write_loads(dirn, loads)
    for b in bs:
        cmd += ["--call", "%s_step" % b.prefix]
        for k in range(b.nparams):
            cmd += ["--print", "%s_a%d.grad" % (b.prefix, k)]
    if CUDA:
        ce, err = cuda_cmd(cmd, src, ["--precision=double"])
        if ce is None:
            return None, err
        got, err = run_json(*ce)
    else:
        got, err = run_json(cmd)
    if got is None:
        return None, err
    return {k: np.array(o["values"], dtype=np.float64) for k, o in got.items()}, None


def torch_grads(b, spec):
    import torch
    ts = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in b.ops[:b.nparams]]
    e, out, uniq = dedupe(explicit(spec, [a.shape for a in b.ops]))
    r = torch.einsum(e, *(ts * len(b.ops) if b.nparams == 1 else ts))
    # the loss sees only the diagonal cells the result writes
    w = torch.tensor(np.einsum(out + "->" + uniq, b.w) if out != uniq else b.w)
    (r * w).sum().backward()
    return [t.grad.numpy().reshape(-1) for t in ts]


def variant_grad():
    cases = [c for c in selected() if c[3]]
    for variant in ("f64",) if CUDA else ("f64", "kinds"):
        tag = ("cuda-grad-" if CUDA else "grad-") + variant
        bs = [grad_program(n, s, sh, variant) for (n, s, sh, _) in cases]
        got, _ = run_grads(bs, os.path.join(work, tag))
        for b, (name, spec, _, _) in zip(bs, cases):
            g = got
            if g is None:  # isolate the failing cases
                g, err = run_grads([b], os.path.join(work, tag, name))
                if g is None:
                    report(name, tag, False, "(%s) %s" % (spec, err))
                    continue
            ok, msg = True, ""
            for k, want in enumerate(torch_grads(b, spec)):
                v = g.get("%s_a%d.grad" % (b.prefix, k))
                if v is None or v.shape != want.shape or not np.allclose(v, want, rtol=1e-12, atol=1e-12):
                    ok = False
                    msg = "(%s) operand %d: got %s want %s" % (spec, k, None if v is None else v[:8], want[:8])
                    break
            report(name, tag, ok, msg)


if "--list" in flags:
    for v in ("f32", "kinds", "multi"):
        for (name, spec, shapes, _) in selected():
            print("(* %s [%s]: %s *)" % (name, v, spec))
            print("\n".join(build(name, spec, shapes, v).lines))
    sys.exit(0)

for v in ("cuda", "cuda-tf32") if CUDA else ("f32", "f64", "kinds", "multi", "cd"):
    variant_values(v)
if "--no-check" not in flags and not CUDA:
    variant_check()
if "--no-grad" not in flags:
    variant_grad()
nfail = results.count(False)
print("%d checks, %d failed" % (len(results), nfail))
print("ALL-OK" if nfail == 0 else "FAILURES")
sys.exit(1 if nfail else 0)
