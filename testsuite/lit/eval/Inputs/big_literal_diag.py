"""Writes malformed uses of big literals, each twice: DIR/packed/CASE.tdsl, where the
bracket is packable apart from its error, and DIR/tokens/CASE.tdsl, the same with a
comment on a line of its own inside the bracket (a bracket with a comment is always
read token by token). No error lies on the comment's line, so every diagnostic
(file:line:col, echoed line, caret) must be the same for both.

usage: big_literal_diag.py DIR"""
import os
import sys


def row(n, start=0, sep=", "):
    return sep.join("%g" % ((start + j) * 0.25 - 3) for j in range(n))


def lit(rows, close=" ]"):
    """A literal over several lines; line 2 is empty (packed) or a comment (tokens)."""
    return "[\n@@\n  " + ";\n  ".join(rows) + close


cases = {
    # a malformed number inside: the lexer's error, the parser's consequences
    "bad_number": "let%op x = " + lit(["[" + row(20) + "]", "[" + row(7) + ", 1.2.3, " + row(12) + "]"]) + "\n",
    "bad_suffix": "let%op x = " + lit(["(" + row(20) + ")", "(" + row(9) + ", 12abc, " + row(10) + ")"]) + "\n",
    # rows of different lengths: at a row (list) and at a tuple (its first number)
    "ragged_row": "let%op x = " + lit(["[" + row(20, sep="; ") + "]", "[" + row(19, sep="; ") + "]"]) + "\n",
    "ragged_tuple": "let%op x = " + lit(["[" + row(20) + "]", "[" + row(21) + "]", "[" + row(20) + "]"]) + "\n",
    "short_first": "let%op x = " + lit(["[" + row(17) + "]", "[" + row(20) + "]"]) + "\n",
    # a literal where a number belongs, and a number where a row belongs
    "not_a_number": "let%op x = " + lit(["5", "[" + row(16, sep="; ") + "]"]) + "\n",
    "number_for_row": "let%op x = " + lit(["[" + row(16, sep="; ") + "]", "5"]) + "\n",
    # the declared dims contradict the literal's, and a shape error in inference
    "declared_dims": "let%op x = { w = " + lit(["(" + row(20) + ")", "(" + row(20) + ")"]) + "; o = [3]; i = [20] }\n",
    "inferred": "let%op x = " + lit(["(" + row(20) + ")", "(" + row(20) + ")"]) + " + range 3\n",
    # syntax errors next to a literal
    "syntax_after": "let%op x = " + lit(["(" + row(20) + ")"]) + " )\nlet%op y = 1 +\n",
    "syntax_open": "open " + lit(["(" + row(20) + ")"]) + "\n",
    "unclosed": "let%op x = " + lit(["(" + row(20) + ")"], close="\n") + "let%op y = 2\n",
    "trailing_comma": "let%op x = " + lit(["[" + row(20) + ",]"]) + "\n",
    # a packed list of numbers where strings belong (an einsum's capture list)
    "capture": "let%op y = { a } +* \"ij;jk=>ik\" " + lit([row(16, sep="; ")]) + " { b }\n",
}
for kind, mark in (("packed", ""), ("tokens", "  (* token by token *)")):
    os.makedirs(os.path.join(sys.argv[1], kind), exist_ok=True)
    for name, text in cases.items():
        with open(os.path.join(sys.argv[1], kind, name + ".tdsl"), "w") as f:
            f.write(text.replace("@@", mark))
print(" ".join(sorted(cases)))
