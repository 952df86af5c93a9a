// Lexer.h -- netc's hand-written Net# lexer and, for tests, the reference
// lexer that ANTLR generates from grammar/NetSharp.g4. Both produce the same
// token types (the generated lexer's numbering) and byte ranges; the
// hand-written one is an order of magnitude faster and allocates nothing per
// token, which is what keeps `netc check` on 10,000-layer files fast.
// Whitespace is skipped; comments, unterminated comments and stray
// characters (including invalid UTF-8 bytes) are tokens on the hidden channel.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace netc {

struct LexedToken {
  uint32_t type = 0;  // NetSharpLexer token type
  uint32_t begin = 0; // byte offsets, end exclusive
  uint32_t end = 0;
  bool hidden = false; // comments and stray characters: not for the parser
};

/// Lexes `text` with the hand-written lexer (the one the compiler uses).
std::vector<LexedToken> lexSource(std::string_view text);

/// Lexes `text` with the ANTLR-generated lexer: the reference the tests
/// compare lexSource against. Bytes that are not valid UTF-8 must have been
/// replaced (one byte for one) before calling.
std::vector<LexedToken> lexSourceWithAntlr(std::string_view text);

/// Tuples of at least this many plain numbers are folded for the parser.
inline constexpr size_t kFoldNumberTuplesFrom = 64;

/// Replaces, in place, every tuple of at least `minItems` plain numbers --
/// `[` (`-`? INT-or-REAL) (`,` (`-`? INT-or-REAL))* `]` with no comment or
/// stray character inside, and not right after a name (an index or a layer's
/// shape) -- by one NUMBER_LIST token covering it, for the
/// parser (grammar/NetSharp.g4): a huge tuple of weights then costs one token
/// and no parse tree. Linear in the number of tokens.
void foldNumberTuples(std::vector<LexedToken> &tokens, size_t minItems = kFoldNumberTuplesFrom);

/// The symbolic name of a token type, e.g. "HIDDEN", "IDENT", "LINE_COMMENT".
std::string_view tokenTypeName(uint32_t type);

/// Token types of interest outside the lexer.
bool isCommentToken(uint32_t type);
bool isErrorToken(uint32_t type);
bool isUnterminatedCommentToken(uint32_t type);
bool isHashCommentToken(uint32_t type); // `# ...`: not a Net# comment (NS0111)

} // namespace netc
