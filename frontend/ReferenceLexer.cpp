// ReferenceLexer.cpp -- runs the ANTLR-generated lexer of grammar/NetSharp.g4
// and reports its tokens as LexedTokens with byte ranges. The compiler uses
// the hand-written lexer (Lexer.cpp); this one is the reference it is
// tested against.
#include "frontend/Lexer.h"

#include "NetSharpLexer.h"
#include "antlr4-runtime.h"

#include <string>

namespace netc {

std::vector<LexedToken> lexSourceWithAntlr(std::string_view text) {
  // ANTLR indexes code points; map them back to byte offsets.
  std::vector<uint32_t> byteOf;
  for (uint32_t i = 0; i < text.size(); ++i)
    if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80)
      byteOf.push_back(i);
  byteOf.push_back(static_cast<uint32_t>(text.size()));
  auto offset = [&](size_t codePoint) {
    return codePoint < byteOf.size() ? byteOf[codePoint] : static_cast<uint32_t>(text.size());
  };

  antlr4::ANTLRInputStream input{std::string(text)};
  NetSharpLexer lexer(&input);
  lexer.removeErrorListeners();
  std::vector<LexedToken> out;
  for (auto token = lexer.nextToken(); token->getType() != antlr4::Token::EOF; token = lexer.nextToken()) {
    if (token->getType() == NetSharpLexer::WS)
      continue;
    out.push_back({static_cast<uint32_t>(token->getType()), offset(token->getStartIndex()),
                   offset(token->getStopIndex() + 1), token->getChannel() != antlr4::Token::DEFAULT_CHANNEL});
  }
  return out;
}

} // namespace netc
