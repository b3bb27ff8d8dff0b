"""einops' tests (github.com/arogozhnikov/einops: einops/tests/test_ops.py,
test_examples.py, test_einsum.py; tests/ in older releases) translated to tdsl unary
einsums, PyTorch as the oracle (harness.py: forward and autograd, float32 and float64,
tdslc --check).

Usage: einops_ops.py TDSLC WORKDIR [--filter S] [--list] [--no-check]

How an einops pattern becomes tdsl (LANGUAGE.md section 7, tdsl(7) EINSUM SPECS):
  - axes are multi-character identifiers (", " separated), `...` is the output row
    variable; rearrange / reduce(sum) is `++`, reduce(max) `@^^`, reduce(min) a user
    op over `=:@-`, reduce(prod) one over `=:*`, any/all over `=:||` / `=:&&`,
    reduce(mean) the sum divided by the count; repeat is `++` with the new axes'
    sizes given by captured labels and set_dim.
  - a composition (x y) is an affine axis: on the argument side `Y*x<+y` reads the
    merged axis at Y*x+y (a split, y's size by set_dim), on the result side it writes
    there (a merge). tdsl's affine axis has two terms, so a group of three or more
    axes takes extra `++` steps, one per further axis (split: before, merge: after).
  - `()` and an anonymous 1 are the fixed index 0 (read position 0 of a size-1 axis;
    in the result, an added axis of size 1); an anonymous size k>1 in a repeat is a new
    axis with set_dim k.
  - an ellipsis inside a group, (...), has no tdsl spelling (a row variable cannot be
    an affine axis): such a pattern spells the ellipsis as named axes (documented).
Where tdsl deliberately differs (LANGUAGE.md section 9), the case checks tdsl's rule:
  - max/min accumulation gives each tied extreme the whole gradient (9.7); the
    gradients compare on inputs without ties.
  - einops' `->` is tdsl's input/output row separator: an einops pattern pasted as a
    tdsl spec is refused with a hint (refused/arrow_spec)."""
import os
import re
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Suite  # noqa: E402

HEADER = """
(* reductions einops has and tdsl's prelude does not: min (the seed's @- accumulator)
   with the max rule for gradients, product, any, all *)
op einmin1 ~spec t1 ~logic:spec {
  forward { v =:@- v1 }
  backward { g1 =+ where (eq (v1, v), g, 0.) }
}
op einprod1 ~spec t1 ~logic:spec { forward { v =:* v1 } }
op einany1 ~spec t1 ~logic:spec { forward { v =:|| v1 } }
op einall1 ~spec t1 ~logic:spec { forward { v =:&& v1 } }
"""
S = Suite(HEADER, check_every=4)


# ---------------------------------------------------------------- einops patterns
def parse_side(s):
    """einops side -> list of elements: ('n', name) | ('e',) | ('a', k) | ('g', [items])
    where a group's items are ('n', name) | ('e',) | ('a', k)."""
    toks = re.findall(r"\.\.\.|\(|\)|[A-Za-z_][A-Za-z0-9_]*|\d+", s)
    out, grp = [], None
    for t in toks:
        if t == "(":
            grp = []
        elif t == ")":
            out.append(("g", grp))
            grp = None
        else:
            it = ("e",) if t == "..." else ("a", int(t)) if t.isdigit() else ("n", t)
            (grp if grp is not None else out).append(it)
    return out


class Pattern:
    """One einops operation on a tensor of a known shape: sizes of every elementary
    axis, the elementary axes of both sides, the oracle and the tdsl translation."""

    def __init__(self, kind, pattern, shape, sizes, reduction=None, expand_ell=False):
        self.kind, self.red = kind, reduction
        left, right = pattern.split("->")
        self.L, self.R = parse_side(left), parse_side(right)
        n_ell = len(shape) - (len(self.L) - 1) if any(e == ("e",) for e in self.L) else 0
        self.ell = ["ell%d" % k for k in range(n_ell)]
        grouped_ell = any(e[0] == "g" and ("e",) in e[1] for e in self.L + self.R)
        self.expand = expand_ell or grouped_ell
        self.size = dict(sizes)
        # sizes from the input's shape
        axes = []
        for e in self.L:
            if e == ("e",):
                for k, n in enumerate(self.ell):
                    self.size[n] = shape[len(axes)]
                    axes.append(n)
                continue
            d = shape[len(axes)]
            axes.append(None)
            if e[0] == "n":
                self.size[e[1]] = d
            elif e[0] == "g":
                items = [i for i in e[1]]
                known, unknown = 1, []
                for i in items:  # (einops refuses an ellipsis in a group on the left)
                    if i[0] == "a":
                        known *= i[1]
                    elif i[1] in self.size:
                        known *= self.size[i[1]]
                    else:
                        unknown.append(i[1])
                assert len(unknown) <= 1, pattern
                if unknown:
                    self.size[unknown[0]] = d // known
        self.shape = tuple(shape)

    # elementary axes (names), in order, of one side; anonymous axes of size k>1 get names
    def elem(self, side, tag):
        out = []
        for j, e in enumerate(side):
            items = e[1] if e[0] == "g" else [e]
            for k, i in enumerate(items):
                if i == ("e",):
                    out += self.ell
                elif i[0] == "n":
                    out.append(i[1])
                elif i[1] > 1:
                    nm = "anon%s%d_%d" % (tag, j, k)
                    self.size[nm] = i[1]
                    out.append(nm)
        return out

    def out_shape(self):
        dims = []
        for e in self.R:
            items = e[1] if e[0] == "g" else [e]
            if e == ("e",):
                dims += [self.size[n] for n in self.ell]
                continue
            d = 1
            for i in items:
                if i == ("e",):
                    d *= int(np.prod([self.size[n] for n in self.ell]))
                elif i[0] == "n":
                    d *= self.size[i[1]]
                else:
                    d *= i[1]
            dims.append(d)
        return tuple(dims)

    # ---- the oracle: einops' definition (reshape, reduce, permute, repeat, reshape)
    def torch(self, x):
        le = self.elem(self.L, "l")
        re_ = self.elem(self.R, "r")
        x = x.reshape([self.size[n] for n in le])
        red = [k for k, n in enumerate(le) if n not in re_]
        if red:
            f = {"sum": lambda t, d: t.sum(d), "max": lambda t, d: t.amax(d), "min": lambda t, d: t.amin(d),
                 "mean": lambda t, d: t.mean(d), "prod": lambda t, d: _prod(t, d),
                 "any": lambda t, d: _anyall(t, d, True),
                 "all": lambda t, d: _anyall(t, d, False)}[self.red]
            x = f(x, red)
            if self.red in ("any", "all"):
                x = x.to(torch.float64)
        kept = [n for n in le if n in re_]
        x = x.permute([kept.index(n) for n in re_ if n in kept]) if kept else x
        for k, n in enumerate(re_):  # new axes (repeat)
            if n not in kept:
                x = x.unsqueeze(k)
        x = x.expand([self.size[n] for n in re_]) if re_ else x
        return x.reshape(self.out_shape())


def _prod(t, dims):
    for d in sorted(dims, reverse=True):
        t = t.prod(d)
    return t


def _anyall(t, dims, anyp):
    b = t != 0
    for d in sorted(dims, reverse=True):
        b = b.any(d) if anyp else b.all(d)
    return b


# ---------------------------------------------------------------- tdsl translation
class Emit:
    """Lines of tdsl that compute a chain of einops operations, one `let%op` per step."""

    def __init__(self, prefix):
        self.p, self.lines, self.k, self.caps = prefix, [], 0, 0

    def fresh(self):
        self.k += 1
        return "%st%d" % (self.p, self.k)

    def cap(self, base):
        self.caps += 1
        return "%s%s_c%d" % (self.p, base, self.caps)

    def step(self, src, op, spec, sets, final=None):
        """One unary einsum step; sets: [(label, size)] captured and set."""
        name = final or self.fresh()
        capl = (" [ %s ]" % "; ".join('"%s"' % l for l, _ in sets)) if sets else ""
        if op == "sum":
            e = '%s ++ "%s"%s' % (src, spec, capl)
        elif op == "max":
            e = '%s @^^ "%s"%s' % (src, spec, capl)
        else:  # the user-defined ops of HEADER take no captured labels
            assert not sets, spec
            e = 'ein%s1 ~spec:"%s" %s' % (op, spec, src)
        self.lines.append("let%%op %s = %s" % (name, e))
        for l, d in sets:
            self.lines.append("let _ = set_dim %s %d" % (l, d))
        return name


def spec_join(items, single_char=False):
    if single_char:
        return "".join(items)
    s = ", ".join(items)
    # one plain axis alone would be single-character mode: a trailing comma keeps it
    # multi-character
    return s + "," if len(items) == 1 and re.match(r"^[A-Za-z_][A-Za-z0-9_]+$", s) else s


def translate(P, em, src, final, single_char=False):
    """tdsl steps for one einops operation on the tensor src; returns the result name."""
    ell = P.ell
    use_ell = not P.expand and ("e",) in P.L
    op = "sum" if P.kind != "reduce" or P.red in ("sum", "mean") else P.red
    dropped = set()
    # the left side: ["e"] (the row variable) | ["0"] (a size-1 axis) | ["ax", names]
    L = []
    for e in P.L:
        if e == ("e",):
            L += [["e"]] if use_ell else [["ax", [n]] for n in ell]
        elif e[0] == "n":
            L.append(["ax", [e[1]]])
        elif e[0] == "a":
            L.append(["0"])
        else:
            its = []
            for i in e[1]:
                if i == ("e",):
                    its += ell
                elif i[0] == "n" and P.size[i[1]] != 1:
                    its.append(i[1])
                elif i[0] == "n":
                    dropped.add(i[1])
            L.append(["ax", its] if its else ["0"])

    def render(entries):
        """Argument axes of a step over the current tensor, all axes named locally."""
        arg, res = [], []
        for k, x in enumerate(entries):
            if x[0] == "e":
                arg.append("..."), res.append("...")
            elif x[0] == "0":
                arg.append("0"), res.append("0")
            else:
                arg.append("y%d" % k), res.append("y%d" % k)
        return arg, res

    # groups of three or more: peel the first member off, one step each
    while any(x[0] == "ax" and len(x[1]) >= 3 for x in L):
        j = next(k for k, x in enumerate(L) if x[0] == "ax" and len(x[1]) >= 3)
        names = L[j][1]
        rest = int(np.prod([P.size[m] for m in names[1:]]))
        arg, res = render(L)
        lab = em.cap("rest")
        arg[j] = "%d*y%d<+%s" % (rest, j, lab)
        res[j:j + 1] = ["y%d" % j, lab]
        src = em.step(src, "sum", "%s => %s" % (spec_join(arg), spec_join(res)), [(lab, rest)])
        L = L[:j] + [["ax", names[:1]], ["ax", names[1:]]] + L[j + 1:]
    # the user-defined reductions take no captured labels: split the pairs first
    if op not in ("sum", "max") and any(x[0] == "ax" and len(x[1]) == 2 for x in L):
        arg, res, sets = [], [], []
        for k, x in enumerate(L):
            if x[0] == "ax" and len(x[1]) == 2:
                lab = em.cap("in")
                arg.append("%d*y%d<+%s" % (P.size[x[1][1]], k, lab))
                res += ["y%d" % k, lab]
                sets.append((lab, P.size[x[1][1]]))
            else:
                a1, r1 = render([x])
                arg += [a if a in ("...", "0") else "y%d" % k for a in a1]
                res += [a if a in ("...", "0") else "y%d" % k for a in r1]
        src = em.step(src, "sum", "%s => %s" % (spec_join(arg), spec_join(res)), sets)
        L2 = []
        for x in L:
            L2 += [["ax", [n]] for n in x[1]] if x[0] == "ax" else [x]
        L = L2
    # ---- the core step
    sets, arg, names = [], [], {}
    for x in L:
        if x[0] == "e":
            arg.append("...")
        elif x[0] == "0":
            arg.append("0")
        elif len(x[1]) == 1:
            arg.append(x[1][0])
            names[x[1][0]] = x[1][0]
        else:
            a, b = x[1]
            lab = em.cap(b)
            sets.append((lab, P.size[b]))
            arg.append("%d*%s<+%s" % (P.size[b], a, lab))
            names[a], names[b] = a, lab

    def rname(n):
        if n in names:
            return names[n]
        if P.size[n] == 1:
            return "0"
        lab = em.cap(n)
        names[n] = lab
        sets.append((lab, P.size[n]))
        return lab

    res, R, anon = [], [], 0
    for e in P.R:
        if e == ("e",):
            if use_ell:
                res.append("..."), R.append(["e"])
            else:
                for n in ell:
                    res.append(rname(n)), R.append(["ax"])
            continue
        its = []
        for i in (e[1] if e[0] == "g" else [e]):
            if i == ("e",):
                its += ell
            elif i[0] == "a" and i[1] > 1:
                anon += 1
                nm = "anon%d" % anon
                P.size[nm] = i[1]
                its.append(nm)
            elif i[0] == "n":
                its.append(i[1])
        if e[0] == "g":  # size-1 members add nothing to a composition
            its = [n for n in its if P.size[n] != 1]
        if not its:
            res.append("0"), R.append(["0"])
        elif len(its) == 1:
            res.append(rname(its[0])), R.append(["ax"])
        else:
            res += [rname(n) for n in its[:-2]]
            res.append("%d*%s<+%s" % (P.size[its[-1]], rname(its[-2]), rname(its[-1])))
            sz = [P.size[n] for n in its]
            R.append(["m", sz[:-2] + [sz[-2] * sz[-1]]])
    spec = "%s => %s" % (spec_join(arg, single_char), spec_join(res, single_char))
    pending = any(x[0] == "m" and len(x[1]) >= 2 for x in R)
    mean = P.kind == "reduce" and P.red == "mean"
    if mean:  # divide first: a number is a tensor of one axis, the result may have none
        cnt = int(np.prod(P.shape)) // max(1, int(np.prod(P.out_shape())))
        if cnt > 1:
            src = "(%s /. %d.)" % (src, cnt)
    nm = em.step(src, op, spec, sets, final if not pending else None)
    # ---- merges of three or more: the last two axes of a composition, one step each
    while any(x[0] == "m" and len(x[1]) >= 2 for x in R):
        j = next(k for k, x in enumerate(R) if x[0] == "m" and len(x[1]) >= 2)
        arg, res = [], []
        for k, x in enumerate(R):
            if x[0] in ("e", "0"):
                t = "..." if x[0] == "e" else "0"
                arg.append(t), res.append(t)
            elif x[0] == "ax" or len(x[1]) == 1:
                arg.append("z%d" % k), res.append("z%d" % k)
            else:
                zs = ["z%d_%d" % (k, q) for q in range(len(x[1]))]
                arg += zs
                if k == j:
                    res += zs[:-2] + ["%d*%s<+%s" % (x[1][-1], zs[-2], zs[-1])]
                else:
                    res += zs
        sz = R[j][1]
        R[j] = ["m", sz[:-2] + [sz[-2] * sz[-1]]]
        last = not any(x[0] == "m" and len(x[1]) >= 2 for x in R)
        nm = em.step(nm, "sum", "%s => %s" % (spec_join(arg), spec_join(res)), [], final if last else None)
    return nm


def eo(group, name, src, ops, shape, vals=None, grad=True, differs=None, single_char=False, tol=None,
       arange=False, scale_mean=False, wrap=None):
    """ops: [(kind, pattern, sizes, reduction)], applied in turn to one input (einops'
    definition, Pattern.torch, as the oracle). wrap: (tdsl format with {} for the
    source, torch function) applied to the input first."""
    em = Emit(name + "_")
    cur_shape, cur, pats = shape, "$0" if wrap is None else wrap[0].format("$0"), []
    for k, (kind, pattern, sizes, red) in enumerate(ops):
        p = Pattern(kind, pattern, cur_shape, sizes, red)
        pats.append(p)
        cur = translate(p, em, cur, "$r" if k == len(ops) - 1 else None, single_char)
        cur_shape = p.out_shape()
    ri = max(i for i, l in enumerate(em.lines) if l.startswith("let%op $r = "))
    pre, rline, post = em.lines[:ri], em.lines[ri], em.lines[ri + 1:]

    def fn(x):
        if wrap is not None:
            x = wrap[1](x)
        for p in pats:
            x = p.torch(x)
        return x

    if vals is None and arange:
        v = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
        if scale_mean:
            v = v / max(1.0, v.mean())
        vals = [v]
    c = S.case(group, name, src, [shape], rline[len("let%op $r = "):], fn, grad=grad, vals=vals,
               differs=differs, tol=tol, extra=post)
    c.pre = pre
    return c


# The harness writes a case's lines as: inputs, result, extra. The steps before the
# result go in through this hook.
_orig_fwd = Suite.fwd_lines


def _fwd_lines(self, c):
    L = _orig_fwd(self, c)
    pre = getattr(c, "pre", [])
    if not pre:
        return L
    from harness import _subst
    k = next(i for i, l in enumerate(L) if l.startswith("let%%op %s_r = " % c.name))
    return L[:k] + [_subst(l, c) for l in pre] + L[k:]


Suite.fwd_lines = _fwd_lines

SRC_OPS = "einops/tests/test_ops.py"
SRC_EX = "einops/tests/test_examples.py"
SRC_EIN = "einops/tests/test_einsum.py"
X5 = (2, 3, 4, 5, 6)

# ---- test_ellipsis_ops_numpy / _imperative: identity and equivalent patterns
identity_patterns = [
    "...->...", "a b c d e-> a b c d e", "a b c d e ...-> ... a b c d e", "a b c d e ...-> a ... b c d e",
    "... a b c d e -> ... a b c d e", "a ... e-> a ... e", "a ... -> a ... ", "a ... c d e -> a (...) c d e",
]
for k, p in enumerate(identity_patterns):
    eo("identity", "ident_%d" % k, SRC_OPS + " identity_patterns", [("rearrange", p, {}, None)], X5, arange=True)
equivalent_rearrange_patterns = [
    ("a b c d e -> (a b) c d e", "a b ... -> (a b) ... "),
    ("a b c d e -> a b (c d) e", "... c d e -> ... (c d) e"),
    ("a b c d e -> a b c d e", "... -> ... "),
    ("a b c d e -> (a b c d e)", "... ->  (...)"),
    ("a b c d e -> b (c d e) a", "a b ... -> b (...) a"),
    ("a b c d e -> b (a c d) e", "a b ... e -> b (a ...) e"),
]
for k, (p1, p2) in enumerate(equivalent_rearrange_patterns):
    for j, p in enumerate((p1, p2)):
        eo("rearrange", "eqv_%d_%d" % (k, j), SRC_OPS + " equivalent_rearrange_patterns",
           [("rearrange", p, {}, None)], X5, arange=True)
equivalent_reduction_patterns = [
    ("a b c d e -> ", " ... ->  "),
    ("a b c d e -> (e a)", "a ... e -> (e a)"),
    ("a b c d e -> d (a e)", " a b c d e ... -> d (a e) "),
    ("a b c d e -> (a b)", " ... c d e  -> (...) "),
]
for red in ("min", "max", "sum"):
    for k, (p1, p2) in enumerate(equivalent_reduction_patterns):
        for j, p in enumerate((p1, p2)):
            eo("reduce", "eqred_%s_%d_%d" % (red, k, j), SRC_OPS + " equivalent_reduction_patterns",
               [("reduce", p, {}, red)], X5, arange=True)

# ---- test_rearrange_consistency_numpy
SH6 = (1, 2, 3, 5, 7, 11)
for k, p in enumerate(["a b c d e f -> a b c d e f", "b a c d e f -> a b d e f c", "a b c d e f -> f e d c b a",
                       "a b c d e f -> (f e) d (c b a)", "a b c d e f -> (f e d c b a)",
                       "a b c d e f -> a (b) (c d e) f",
                       "a aa aa1 a1a1 aaaa a11 -> a aa aa1 a1a1 aaaa a11"]):
    eo("rearrange", "consist_%d" % k, SRC_OPS + " test_rearrange_consistency_numpy",
       [("rearrange", p, {}, None)], SH6, arange=True)
eo("rearrange", "consist_roundtrip", SRC_OPS + " test_rearrange_consistency_numpy (b=2, d=5)",
   [("rearrange", "a b c d e f -> (f d) c (e b) a", {}, None),
    ("rearrange", "(f d) c (e b) a -> a b c d e f", dict(b=2, d=5), None)], SH6, arange=True)
eo("rearrange", "consist_roundtrip_sizes", SRC_OPS + " test_rearrange_consistency_numpy (all sizes)",
   [("rearrange", "a b c d e f -> (f d) c (e b) a", dict(zip("abcdef", SH6)), None),
    ("rearrange", "(f d) c (e b) a -> a b c d e f", dict(zip("abcdef", SH6)), None)], SH6, arange=True)
eo("rearrange", "consist_bca", SRC_OPS + " test_rearrange_consistency_numpy (x2)",
   [("rearrange", "a b c -> b c a", {}, None)], (2, 3, 4), arange=True)
eo("rearrange", "consist_single_char", SRC_OPS + " test_rearrange_consistency_numpy, single-character mode",
   [("rearrange", "b a c d e f -> a b d e f c", {}, None)], SH6, arange=True, single_char=True)

# ---- test_rearrange_permutations_numpy (a fixed permutation per rank)
rs = np.random.RandomState(1234)
for n in range(1, 10):
    perm = rs.permutation(n)
    lhs = " ".join("i%d" % a for a in range(n))
    rhs = " ".join("i%d" % a for a in perm)
    eo("permute", "perm_%d" % n, SRC_OPS + " test_rearrange_permutations_numpy",
       [("rearrange", lhs + " -> " + rhs, {}, None)], (2,) * n, arange=True)
    perm = rs.permutation(n)
    lhs = " ".join("i%d" % a for a in range(n)[::-1])
    rhs = " ".join("i%d" % a for a in perm[::-1])
    eo("permute", "perm_rev_%d" % n, SRC_OPS + " test_rearrange_permutations_numpy (reversed names)",
       [("rearrange", lhs + " -> " + rhs, {}, None)], (2,) * n, arange=True)

# ---- test_reduction_imperatives (REDUCTIONS: min max sum mean prod)
red_cases = [("a b c d e -> ", {}), ("a ... -> ", {}), ("(a1 a2) ... (e1 e2) -> ", dict(a1=1, e2=2)),
             ("a b c d e -> (e c) a", {}), ("a ... c d e -> (e c) a", {}), ("a b c d e ... -> (e c) a", {}),
             ("a b c d e -> (e c a)", {}), ("(a a2) ... -> (a2 a) ...", dict(a2=1))]
for red in ("min", "max", "sum", "mean", "prod"):
    for k, (p, sz) in enumerate(red_cases):
        eo("reduce", "red_%s_%d" % (red, k), SRC_OPS + " test_reduction_imperatives",
           [("reduce", p, sz, red)], X5, arange=red != "prod", scale_mean=red == "mean",
           vals=[1 + 0.05 * np.sin(np.arange(720.)).reshape(X5)] if red == "prod" else None,
           grad=red != "prod", tol=1e-4 if red == "prod" else None)
# test_reduction_symbolic: the same with a2=1, e2=1
for red in ("max", "sum"):
    eo("reduce", "red_sym_%s" % red, SRC_OPS + " test_reduction_symbolic",
       [("reduce", "(a a2) ... (e e2) -> ", dict(a2=1, e2=1), red)], X5, arange=True)

# ---- test_reduction_stress_imperatives (fixed random shapes, permutations, skipped axes)
rs = np.random.RandomState(4321)
for red in ("min", "max", "sum", "mean", "prod", "rearrange"):
    for n in range(0, 11, 2 if red in ("mean", "prod") else 1):
        shape = tuple(int(d) for d in rs.randint(2, 4, size=n))
        if int(np.prod(shape)) > 3000:
            shape = tuple(min(d, 2) for d in shape)
        perm = rs.permutation(n)
        skipped = 0 if red == "rearrange" else rs.randint(n + 1)
        lhs = " ".join("x%d" % i for i in range(n))
        rhs = " ".join("x%d" % i for i in perm[skipped:])
        v = np.arange(1, 1 + int(np.prod(shape)), dtype=np.float64).reshape(shape)
        if red == "prod":
            v = v / v.mean()
        eo("stress", "stress_%s_%d" % (red, n), SRC_OPS + " test_reduction_stress_imperatives",
           [("reduce" if red != "rearrange" else "rearrange", lhs + "->" + rhs, {}, None if red == "rearrange" else red)],
           shape, vals=[v], grad=red != "prod", tol=1e-4 if red == "prod" else None)

# ---- test_reduction_with_callable_imperatives: logsumexp over the reduced axes
# (inputs in [0, 1]: log of the sum of exp, without subtracting the maximum first)
for k, (p1, p2) in enumerate(equivalent_reduction_patterns):
    for j, p in enumerate((p1, p2)):
        eo("callable", "lse_%d_%d" % (k, j), SRC_OPS + " test_reduction_with_callable_imperatives",
           [("reduce", p, {}, "sum")], X5, vals=[np.arange(720, dtype=np.float64).reshape(X5) / 719.0],
           wrap=("(exp {})", torch.exp), tol=1e-4)
        CASES_LOG = S.cases[-1]
        CASES_LOG.expr = "log (%s)" % CASES_LOG.expr
        CASES_LOG.fn = (lambda f: (lambda x: torch.log(f(x))))(CASES_LOG.fn)


# ---- test_gradients_imperatives: a chain of reductions, gradients against torch
for red in ("min", "max", "sum", "mean"):
    eo("gradient", "grad_chain_%s" % red, SRC_OPS + " test_gradients_imperatives",
       [("reduce", "a b c -> c a", {}, red), ("reduce", "c a -> a c", {}, red),
        ("reduce", "a (c1 c2) -> a", dict(c1=2), red), ("reduce", "... -> ", {}, red)],
       (2, 3, 4), vals=[np.arange(1, 25, dtype=np.float64).reshape(2, 3, 4)])

# ---- test_concatenations_and_stacking ("b ... -> ... b" over stacked arrays)
for n_arrays in (1, 2, 5):
    for k, shape in enumerate([[], [1], [1, 1], [2, 3, 5, 7], [1] * 6]):
        eo("stack", "stack_%d_%d" % (n_arrays, k), SRC_OPS + " test_concatenations_and_stacking",
           [("rearrange", "b ... -> ... b", {}, None)], tuple([n_arrays] + shape), arange=True)

# ---- repeat_test_cases, check_reversion (repeat, then reduce back with min and max)
repeat_test_cases = [
    ("a b c -> c a b", dict()),
    ("a b c -> (c copy a b)", dict(copy=2, a=2, b=3, c=5)),
    ("a b c -> (a copy) b c ", dict(copy=1)),
    ("a b c -> (c a) (copy1 b copy2)", dict(a=2, copy1=1, copy2=2)),
    ("a ...  -> a ... copy", dict(copy=4)),
    ("... c -> ... (copy1 c copy2)", dict(copy1=1, copy2=2)),
    ("...  -> ... ", dict()),
    (" ...  -> copy1 ... copy2 ", dict(copy1=2, copy2=3)),
    ("a b c  -> copy1 a copy2 b c () ", dict(copy1=2, copy2=1)),
]
for k, (p, sz) in enumerate(repeat_test_cases):
    eo("repeat", "repeat_%d" % k, SRC_OPS + " repeat_test_cases", [("repeat", p, sz, None)], (2, 3, 5), arange=True)
    l, r = p.split("->")
    rep_shape = Pattern("repeat", p, (2, 3, 5), sz).out_shape()
    for red in ("min", "max"):
        eo("repeat", "reversion_%d_%s" % (k, red), SRC_OPS + " check_reversion",
           [("repeat", p, sz, None), ("reduce", r + "->" + l, dict(sz, a=2, b=3, c=5) if "..." not in p else sz, red)],
           (2, 3, 5), arange=True, grad=False)
eo("repeat", "repeat_copy1", SRC_OPS + " test_repeat_numpy (copy=1)",
   [("repeat", "a b c -> copy a b c ", dict(copy=1), None)], (2, 3, 5), arange=True)
test_cases_repeat_anonymous = [
    ("a b c d -> c a d b", dict()),
    ("a b c d -> (c 2 d a b)", dict(a=1, c=4, d=6)),
    ("1 b c d -> (d copy 1) 3 b c ", dict(copy=3)),
    ("1 ...  -> 3 ... ", dict()),
    ("() ... d -> 1 (copy1 d copy2) ... ", dict(copy1=2, copy2=3)),
    ("1 b c d -> (1 1) (1 b) 2 c 3 d (1 1)", dict()),
]
for k, (p, sz) in enumerate(test_cases_repeat_anonymous):
    eo("repeat", "anon_%d" % k, SRC_OPS + " test_cases_repeat_anonymous", [("repeat", p, sz, None)],
       (1, 2, 4, 6), arange=True)
# test_list_inputs
eo("repeat", "list_min", SRC_OPS + " test_list_inputs", [("reduce", "a ... e -> (...)", {}, "min")], X5, arange=True)
eo("repeat", "list_repeat", SRC_OPS + " test_list_inputs", [("repeat", "...  -> b (...)", dict(b=3), None)],
   X5, arange=True)
# test_reduction_imperatives_booleans: any / all keeping the axis ("1" on the right)
bits = np.array([bin(x).count("1") % 2 == 0 for x in range(64)], dtype=np.float64).reshape([2] * 6)
for axis in range(6):
    axes = list("abcdef")
    out = list(axes)
    out[axis] = "1"
    for red in ("any", "all"):
        eo("boolean", "bool_%s_%d" % (red, axis), SRC_OPS + " test_reduction_imperatives_booleans",
           [("reduce", " ".join(axes) + " -> " + " ".join(out), {}, red)], (2,) * 6, vals=[bits], grad=False)
for red in ("any", "all"):
    eo("boolean", "bool_%s_ab" % red, SRC_OPS + " test_reduction_imperatives_booleans",
       [("reduce", "a b ... -> 1 1 ...", {}, red)], (2,) * 6, vals=[bits], grad=False)
# test_torch_compile_with_dynamic_shape's func1 (both input ranks)
for k, shape in enumerate([(4, 5, 6, 3), (6, 3, 4, 2, 3)]):
    a, b, c = shape[:3]
    eo("rearrange", "dynamo_%d" % k, SRC_OPS + " test_torch_compile_with_dynamic_shape",
       [("rearrange", "(a a2) b c ... -> b (c a2) (a ...)", dict(a2=2), None),
        ("reduce", "b ca2 A -> b A", dict(ca2=c * 2), "sum")], shape)

# ---- test_examples.py test_rearrange_examples (x: 2x20x6x8 instead of 10x20x30x40)
XE = (2, 20, 6, 8)
EX = [
    ("ex1_transpose", [("rearrange", "b c h w -> b h w c", {}, None)]),
    ("ex2_view", [("rearrange", "b c h w -> b (c h w)", {}, None)]),
    ("ex3_depth_to_space", [("rearrange", "b (c h1 w1) h w -> b c (h h1) (w w1)", dict(h1=2, w1=2), None)]),
    ("ex4_space_to_depth", [("rearrange", "b c (h h1) (w w1) -> b (h1 w1 c) h w", dict(h1=2, w1=2), None)]),
    ("ex5_transpose", [("rearrange", "b1 sound b2 letter -> b1 b2 sound letter", {}, None)]),
    # test6 slices t[:, ::2] between the two steps (no tdsl spelling): without it
    ("ex6_parse_shape", [("rearrange", "b c h w -> (b h w) c", {}, None),
                         ("rearrange", "(b h w) c2 -> b c2 h w", dict(b=2, h=6, w=8), None)]),
    # test7 adds the two halves y1 + y2 of the g axis: a sum over g
    ("ex7_groups", [("reduce", "b (c g) h w -> b c h w", dict(g=2), "sum")]),
    ("ex8_maxpool", [("reduce", "b c (h h1) (w w1) -> b c h w", dict(h1=2, w1=2), "max")]),
    ("ex9_squeeze", [("reduce", "b c h w -> b c () ()", {}, "max"), ("rearrange", "b c () () -> c b", {}, None)]),
    ("ex10_stack", [("rearrange", "b c h w -> b h w c", {}, None)]),
    ("ex11_concat", [("rearrange", "b c h w -> h (b w) c", {}, None)]),
    ("ex_shufflenet", [("rearrange", "b (c1 c2) h w-> b (c2 c1) h w", dict(c1=4, c2=5), None)]),
    ("ex_strided_1d", [("rearrange", "b c t1 t2 -> b c (t1 t2)", {}, None),
                       ("rearrange", "b c (t stride) -> (stride b) c t", dict(stride=2), None),
                       ("rearrange", "(stride b) c t -> b c (t stride)", dict(stride=2), None)]),
    ("ex_strided_2d", [("rearrange", "b c (h hs) (w ws) -> (hs ws b) c h w", dict(hs=2, ws=2), None),
                       ("rearrange", "(hs ws b) c h w -> b c (h hs) (w ws)", dict(hs=2, ws=2), None)]),
    ("ex_unet_1d", [("rearrange", "b c t1 t2 -> b c (t1 t2)", {}, None),
                    ("rearrange", "b c (t dt) -> b (dt c) t", dict(dt=2), None),
                    ("rearrange", "b (dt c) t -> b c (t dt)", dict(dt=2), None)]),
]
for name, ops in EX:
    eo("examples", name, SRC_EX + " test_rearrange_examples", ops, XE, arange=name == "ex8_maxpool",
       vals=None)

# ---- test_einsum.py test_functional: einops.einsum patterns (multi-character names)
FUNC = [
    ("b, c, h, w; b, w => b, h", ((2, 3, 4, 5), (2, 5))),
    ("one, two, three, ...; three, four, five => two, five, ...", None),
    ("first_tensor, second_tensor => first_tensor", ((5, 4),)),
    ("i, i => ", ((5, 5),)),
    ("i, middle, i => middle", ((5, 10, 5),)),
    ("i, ..., i => ...", ((5, 3, 2, 1, 4, 5),)),
    ("i, ..., i => i, ...", ((5, 3, 2, 1, 4, 5),)),
    ("one, one, one => one", ((5, 5, 5),)),
    ("i, j, k => j, i, k", ((1, 2, 3),)),
    ("... => ...", ((5, 4, 3, 2, 1),)),
    ("...; ... => ...", ((3, 2), (3, 2))),
    ("index => ", ((10,),)),
    ("...; one, two, three => ...", None),
]
TORCH_EIN = {
    "b, c, h, w; b, w => b, h": "abcd,ad->ac",
    "first_tensor, second_tensor => first_tensor": "ab->a", "i, i => ": "aa->",
    "i, middle, i => middle": "aba->b", "i, ..., i => ...": "a...a->...", "i, ..., i => i, ...": "a...a->a...",
    "one, one, one => one": "aaa->a", "i, j, k => j, i, k": "abc->bac", "... => ...": "...->...",
    "...; ... => ...": "...,...->...", "index => ": "a->",
}
for k, (spec, shapes) in enumerate(FUNC):
    if spec not in TORCH_EIN:
        continue
    n = len(shapes)
    expr = '$0 ++ "%s"' % spec if n == 1 else '$0 +* "%s" $1' % spec
    S.case("einsum", "func_%d" % k, SRC_EIN + " test_functional_cases", list(shapes), expr,
           lambda *a, s=TORCH_EIN[spec]: torch.einsum(s, *a), tol=1e-4)
# "Ellipsis, and full names" and friends (the ellipsis leads or trails in the argument)
S.case("einsum", "func_ell_lead", SRC_EIN + " '... one two three, three four five -> ... two five'",
       [(32, 5, 2, 3, 4), (4, 5, 6)], '$0 +* "..., one, two, three; three, four, five => ..., two, five" $1',
       lambda a, b: torch.einsum("...abc,cde->...be", a, b), tol=1e-4)
S.case("einsum", "func_ell_trail", SRC_EIN + " 'one two three ..., three four five -> two five ...'",
       [(2, 3, 4, 32, 5), (4, 5, 6)], '$0 +* "one, two, three, ...; three, four, five => two, five, ..." $1',
       lambda a, b: torch.einsum("abc...,cde->be...", a, b), tol=1e-4)
S.case("einsum", "func_ell_both", SRC_EIN + " '... one two three, ... three four five -> ... two five'",
       [(32, 5, 2, 3, 4), (32, 5, 4, 5, 6)],
       '$0 +* "..., one, two, three; ..., three, four, five => ..., two, five" $1',
       lambda a, b: torch.einsum("...abc,...cde->...be", a, b), tol=1e-4)
S.case("einsum", "func_three", SRC_EIN + " 'b c h w, b w, b c -> b h' (a chain of two einsums)",
       [(2, 3, 40, 5), (2, 5), (2, 3)], '($0 +* "b, c, h, w; b, w => b, c, h" $1) +* "b, c, h; b, c => b, h" $2',
       lambda a, b, c: torch.einsum("abcd,ad,ab->ac", a, b, c), tol=1e-4)
S.case("einsum", "func_spaces", SRC_EIN + " ' one  two  ,  three four->two  four  '",
       [(2, 3), (4, 5)], '$0 +* "  one,  two  ;  three four=>two  four  " $1',
       lambda a, b: torch.einsum("ab,cd->bd", a, b), tol=1e-4)
S.case("einsum", "func_three_ell", SRC_EIN + " '..., ..., ... -> ...' (a chain)",
       [(3, 2), (3, 2), (3, 2)], '($0 +* "...; ... => ..." $1) +* "...; ... => ..." $2',
       lambda a, b, c: torch.einsum("...,...,...->...", a, b, c))

# ---- test_einsum.py test_layer_cases: EinMix (a weight, maybe a bias, shapes inferred)
MIX = [
    ("mix_0", "b, c_in, h, w; c_in, c_out => w, c_out, h, b", (2, 12, 3, 4), (12, 13), None),
    ("mix_1", "b, c_in, h, w; c_in, c_out => w, c_out, h, b", (2, 12, 3, 4), (12, 13), "c_out"),
    ("mix_3", "b, c_in, h, w; c_in, h, w, c_out => b, c_out", (2, 12, 3, 4), (12, 3, 4, 5), None),
    ("mix_4", "b, t, head, c_in; head, c_in, c_out => b, t, head, c_out", (2, 3, 4, 5), (4, 5, 6), None),
]
for name, spec, xs, ws, bias in MIX:
    lhs, res = spec.split(" => ")
    ts = lhs.split("; ")[0].replace(",", "").split()
    tw = lhs.split("; ")[1].replace(",", "").split()
    tr = res.replace(",", "").split()
    letters = {n: chr(ord("a") + k) for k, n in enumerate(dict.fromkeys(ts + tw + tr))}
    tspec = "%s,%s->%s" % ("".join(letters[n] for n in ts), "".join(letters[n] for n in tw),
                           "".join(letters[n] for n in tr))
    if bias is None:
        S.case("einmix", name, SRC_EIN + " test_layer_cases (EinMix)", [xs, ws], '$0 +* "%s" $1' % spec,
               lambda a, w, s=tspec: torch.einsum(s, a, w), tol=1e-4)
    else:
        # the bias on c_out, which is axis 1 of the result: broadcast as c_out, 1, 1
        S.case("einmix", name, SRC_EIN + " test_layer_cases (EinMix, bias_shape='c_out')",
               [xs, ws, (13, 1, 1)], '($0 +* "%s" $1) + $2' % spec,
               lambda a, w, b, s=tspec: torch.einsum(s, a, w) + b, tol=1e-4)
# EinMix's weight shape comes from inference alone: an inline parameter, initialized 1
S.case("einmix", "mix_2_inferred", SRC_EIN + " test_layer_cases (weight shape from the pattern)",
       [(2, 12, 3, 4)], '$0 +* "b, c_in, h, w; c_in, c_out => w, c_out, h, b" { $nw = 1.; o = [ 12; 7 ] }',
       lambda a: torch.einsum("bchw,cd->wdhb", a, torch.ones(12, 7, dtype=a.dtype)), tol=1e-4)

# ---- compositions in the batch and input rows (tdsl's three kinds of axes): x is
# b|c->h (memory b, h, c); a split of h into the batch and output rows, a merge of h and
# c in the batch row, and the merge back of a split's halves from two rows
ROWS = "einops/tests/test_ops.py (equivalent_rearrange_patterns over batch|input->output rows)"
S.case("rows", "rows_split", ROWS, [(2, 6, 3)], '$0 ++ "b|c->2*h<+$nh1 => $nh1|b->h, c" [ "$nh1" ]',
       lambda x: x.reshape(2, 3, 2, 3).permute(2, 1, 3, 0), kinds=[(1, 1, 1)], extra=["let _ = set_dim $nh1 2"])
S.case("rows", "rows_merge", ROWS, [(2, 6, 3)], '$0 ++ "b|c->h => b|3*h<+c"', lambda x: x.reshape(2, 18),
       kinds=[(1, 1, 1)])
S.case("rows", "rows_roundtrip", ROWS, [(2, 6, 3)],
       '($0 ++ "b|c->2*h<+$nh1 => $nh1|b->h, c" [ "$nh1" ]) ++ "h1|b->h, c => 2*h<+h1|c->b"',
       lambda x: x.permute(1, 0, 2), kinds=[(1, 1, 1)], extra=["let _ = set_dim $nh1 2"])

# ---- refused: einops spellings tdsl does not have, and sizes that do not fit
ERR = "let%op x = { x; o = [ 2; 6; 4 ] }\n"
S.error("arrow_spec", SRC_OPS + " (an einops pattern as a tdsl spec: -> is tdsl's input/output separator)",
        ERR + 'let%op y = x ++ "a b c -> c a b"\n', "=>", 2)
S.error("group_spec", SRC_OPS + " (a parenthesized composition)",
        ERR + 'let%op y = x ++ "a (b c) => a b c"\n', "unexpected character '('", 2)
S.error("collapsed_ellipsis", SRC_OPS + " test_collapsed_ellipsis_errors_out ('(...)' on the left)",
        ERR + 'let%op y = x ++ "a, (...) => a, ..."\n', "unexpected character '('", 2)
S.error("split_nofit", SRC_OPS + " (a split whose size does not divide the axis: (h h1) with h1=4 over 6)",
        ERR + 'let%op y = x ++ "a, 4*h<+h1, c => a, h, h1, c" [ "h1" ]\nlet _ = set_dim h1 4\n', "valid convolution", 2)
S.error("repeat_nosize", SRC_OPS + " (repeat without the new axis's size)",
        ERR + 'let%op y = x ++ "a, b, c => a, b, c, copy"\n', "copy", 2)
S.error("concat_spec", "einops-style concatenation (tdsl has none: ^ is refused)",
        ERR + 'let%op y = x ++ "a^b, c => a, c"\n', "concatenation", 2)

sys.exit(S.main())
