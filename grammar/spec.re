/* spec.re: the lexer of einsum specs, and spec_parse. The mode is fixed once per spec
 * (spec_is_multichar, OCANNL's rule); after that both modes produce the same tokens, so
 * the grammar (spec.y) does not know about modes. */
#include <limits.h>
#include <string.h>

#include "diag.h"
#include "spec.tab.h"

/* The text is NUL-terminated: NUL is the sentinel for `$`. */
/*!re2c
  ident  = [A-Za-z_][A-Za-z0-9_]*;
  digits = [0-9]+;
  white  = [ \t\r\n]+;
*/

/* A token of length len at the current token start. */
static int tok(SpecParser *p, SPEC_YYLTYPE *lloc, const unsigned char *end, int kind) {
  lloc->first = (int)(p->tok - p->text);
  lloc->last = (int)((const char *)end - p->text);
  p->cur = (const char *)end;
  p->last_kind = kind;
  return kind;
}

/* Records a lexical error at the current token and returns BAD, which no rule accepts:
 * the parser stops and keeps this message. */
static int bad(SpecParser *p, SPEC_YYLTYPE *lloc, const unsigned char *end, const char *msg) {
  tok(p, lloc, end, BAD);
  spec_fail(p, lloc->first, msg);
  return BAD;
}

/* A character no rule takes: one error per UTF-8 character, named whole (as the
 * source lexer does), not by its first byte ('\xc3' for an 'é'). */
static int bad_char(SpecParser *p, SPEC_YYLTYPE *lloc, const unsigned char *lim) {
  const unsigned char *s = (const unsigned char *)p->tok, *e = s + 1;
  int len;
  const char *hint, *shown = diag_char_desc(p->a, s, (size_t)(lim - s), &len, &hint);
  if (*s >= 0xc0 && len == 1) { /* a malformed sequence: one error, named whole */
    while (e < lim && (*e & 0xc0) == 0x80)
      e++;
    shown = arena_printf(p->a, "'%.*s'", (int)(e - s), (const char *)s);
  } else {
    e = s + len;
  }
  return bad(p, lloc, e, arena_printf(p->a, "unexpected character %s in einsum spec%s", shown, hint));
}

static int int_token(SpecParser *p, SPEC_YYSTYPE *lval, SPEC_YYLTYPE *lloc,
                     const unsigned char *end) {
  long v = 0;
  for (const char *s = p->tok; s < (const char *)end; s++) {
    v = v * 10 + (*s - '0');
    if (v > INT_MAX)
      return bad(p, lloc, end,
                 arena_printf(p->a, "index '%.*s' is too large in einsum spec",
                              (int)((const char *)end - p->tok), p->tok));
  }
  lval->tok.ival = (int)v;
  return tok(p, lloc, end, INT);
}

/* The name of `..name..` (or `..name,..`) at the current token. */
static const char *rowvar_name(SpecParser *p) {
  const char *s = p->tok + 2, *e = s;
  while ((*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') || (*e >= '0' && *e <= '9') ||
         *e == '_')
    e++;
  return arena_strndup(p->a, s, (size_t)(e - s));
}

/* `...name..` (or `...name,..`) at the current token: the named row variable `..name..`
 * written with the context ellipsis' three dots. It never parses (after `...` a row goes
 * on with axes only), so say what was meant, as OCANNL's hint does. (Its second hint, that
 * a multi-letter name needs multichar mode, does not apply: `..name..` lexes as one row
 * variable in both modes here.) */
static int misspelled_rowvar(SpecParser *p, SPEC_YYLTYPE *lloc, const unsigned char *end) {
  /* `...a...` is an ellipsis, an axis and a second ellipsis: the parser's error says so. */
  if (*end == '.') return tok(p, lloc, (const unsigned char *)p->tok + 3, ELLIPSIS);
  const char *s = p->tok + 3;
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n') s++;
  const char *e = s;
  while ((*e >= 'a' && *e <= 'z') || (*e >= 'A' && *e <= 'Z') || (*e >= '0' && *e <= '9') || *e == '_') e++;
  int n = (int)(e - s);
  return bad(p, lloc, end,
             arena_printf(p->a, "`...` is the unnamed context ellipsis; a named row variable is written "
                                "`..%.*s..`, not `...%.*s..`", n, s, n, s));
}

int spec_yylex(SPEC_YYSTYPE *lval, SPEC_YYLTYPE *lloc, SpecParser *p) {
  const unsigned char *lim = (const unsigned char *)p->text + strlen(p->text);
  const unsigned char *cur, *mar;
  for (;;) {
    p->tok = p->cur;
    cur = (const unsigned char *)p->cur;
    if (p->multichar) {
      /*!re2c
        re2c:api:style = free-form; re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur; re2c:define:YYMARKER = mar; re2c:define:YYLIMIT = lim;
        re2c:yyfill:enable = 0; re2c:eof = 0;
        $         { return tok(p, lloc, cur, SPEC_YYEOF); }
        white     { p->cur = (const char *)cur; continue; }
        "_"       { return tok(p, lloc, cur, UNDERSCORE); }
        ident     { lval->tok.str = arena_strndup(p->a, p->tok, (size_t)((const char *)cur - p->tok));
                    return tok(p, lloc, cur, IDENT); }
        digits    { return int_token(p, lval, lloc, cur); }
        digits [A-Za-z_][A-Za-z0-9_]* {
                    return bad(p, lloc, cur, arena_printf(p->a,
                      "invalid axis '%.*s' in einsum spec: identifiers start with a letter",
                      (int)((const char *)cur - p->tok), p->tok)); }
        ".." ident ".." { lval->tok.str = rowvar_name(p); return tok(p, lloc, cur, ROWVAR); }
        ".." ident [ \t]* "," [ \t]* ".." {
                    /* OCANNL's spelling that forces multi-character mode */
                    lval->tok.str = rowvar_name(p); return tok(p, lloc, cur, ROWVAR); }
        "...."    { return bad(p, lloc, cur, "row variable with an empty name in einsum spec"); }
        "..." white? ident white? ("," white?)? ".." { return misspelled_rowvar(p, lloc, cur); }
        "..."     { return tok(p, lloc, cur, ELLIPSIS); }
        "^"       { return bad(p, lloc, cur,
                      "axis concatenation '^' is not supported in einsum specs"); }
        ","       { return tok(p, lloc, cur, COMMA); }
        "|"       { return tok(p, lloc, cur, PIPE); }
        "->"      { return tok(p, lloc, cur, ARROW); }
        "=>"      { return tok(p, lloc, cur, DARROW); }
        ";"       { return tok(p, lloc, cur, SEMI); }
        "*"       { return tok(p, lloc, cur, STAR); }
        "+"       { return tok(p, lloc, cur, PLUS); }
        /* OCANNL lexes '<' / '=' and '+' as two tokens, so spaces may separate them:
           its nn_blocks pooling writes `stride*oh< + wh`. */
        "=" white? "+" { return tok(p, lloc, cur, EQPLUS); }
        "<" white? "+" { return tok(p, lloc, cur, LTPLUS); }
        *         { return bad_char(p, lloc, lim); }
      */
    } else {
      /* Single-character mode: one letter = one axis; a run of digits = one index. */
      /*!re2c
        re2c:api:style = free-form; re2c:define:YYCTYPE = "unsigned char";
        re2c:define:YYCURSOR = cur; re2c:define:YYMARKER = mar; re2c:define:YYLIMIT = lim;
        re2c:yyfill:enable = 0; re2c:eof = 0;
        $         { return tok(p, lloc, cur, SPEC_YYEOF); }
        white     { p->cur = (const char *)cur; continue; }
        "_"       { return tok(p, lloc, cur, UNDERSCORE); }
        [A-Za-z]  { lval->tok.str = arena_strndup(p->a, p->tok, 1);
                    return tok(p, lloc, cur, IDENT); }
        digits    { return int_token(p, lval, lloc, cur); }
        ".." ident ".." { lval->tok.str = rowvar_name(p); return tok(p, lloc, cur, ROWVAR); }
        "...."    { return bad(p, lloc, cur, "row variable with an empty name in einsum spec"); }
        "..." white? ident white? ".." { return misspelled_rowvar(p, lloc, cur); }
        "..."     { return tok(p, lloc, cur, ELLIPSIS); }
        "|"       { return tok(p, lloc, cur, PIPE); }
        "->"      { return tok(p, lloc, cur, ARROW); }
        "=>"      { return tok(p, lloc, cur, DARROW); }
        ";"       { return tok(p, lloc, cur, SEMI); }
        *         { return bad_char(p, lloc, lim); }
      */
    }
  }
}

/* tdsl(7), EINSUM SPECS, as OCANNL's lexer decides: any of , * + ^ & < or a '=' that
 * does not start "=>" means identifiers; otherwise every letter is an axis. So affine
 * specs (`2*o<+k`) are always multi-character. */
bool spec_is_multichar(const char *text) {
  for (const char *s = text; *s; s++) {
    if (strchr(",*+^&<", *s) || (*s == '=' && s[1] != '>'))
      return true;
  }
  return false;
}

Spec *spec_parse(Arena *a, const char *text, int *err_col, const char **err_msg) {
  SpecParser p = {0};
  p.a = a;
  p.text = text;
  p.cur = text;
  p.err_col = -1;
  p.multichar = spec_is_multichar(text);
  const char *s = text;
  while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
    s++;
  if (*s == '\0') {
    *err_col = 0;
    *err_msg = "empty einsum spec";
    return NULL;
  }
  p.spec = ANEW(a, Spec);
  p.spec->text = arena_strdup(a, text);
  p.spec->multichar = p.multichar;
  if (spec_yyparse(&p) != 0 || p.err_col >= 0) {
    *err_col = p.err_col >= 0 ? p.err_col : 0;
    *err_msg = p.err_msg ? p.err_msg : "invalid einsum spec";
    return NULL;
  }
  return p.spec;
}
