/* parse.h: internals shared by the lexer (grammar/lexer.re) and the parser
 * (grammar/parser.y). The lexer turns a whole file into a token array first, so that
 * the parser can classify `let` tokens with unbounded lookahead (see classify_lets). */
#ifndef TDSL_PARSE_H
#define TDSL_PARSE_H

#include "ast.h"
#include "base.h"
#include "diag.h"

typedef struct Token {
  int kind;         /* a token kind of parser.tab.h (T_...) */
  Loc loc;
  const char *text; /* the spelling in the source (not NUL-terminated) */
  int len;
  const char *str;  /* identifiers, labels, operators: the name; strings: decoded */
  long long ival;   /* T_INT */
  double fval;      /* T_FLOAT */
  const NdLit *lit; /* T_NDLIT: the whole bracket (text and len span it) */
} Token;

typedef struct TokenVec {
  Token *items;
  int len, cap;
  bool eof_error; /* an unterminated comment or string was reported */
} TokenVec;

/* Lexes all of f; reports lexical errors to d and skips the offending text. The last
 * token is always the end-of-file token. With pack, a bracket of plain numbers is one
 * T_NDLIT token (ast.h, NdLit). */
TokenVec lex_all(Arena *a, Diag *d, const SrcFile *f, bool pack);

#endif
