// TokenArrayStream.cpp -- the array-backed token stream for the ANTLR parser.
#include "frontend/TokenArrayStream.h"

namespace netc {

std::string ArrayToken::getText() const {
  if (type_ == EOF)
    return "<EOF>";
  return std::string(stream_->text().substr(begin_, end_ - begin_));
}

std::string_view ArrayToken::sourceText() const {
  if (type_ == EOF)
    return {};
  return stream_->text().substr(begin_, end_ - begin_);
}

antlr4::TokenSource *ArrayToken::getTokenSource() const {
  return stream_->getTokenSource();
}

TokenArrayStream::TokenArrayStream(std::string_view text, const std::vector<LexedToken> &tokens,
                                   std::string sourceName)
    : text_(text), sourceName_(std::move(sourceName)) {
  tokens_.reserve(tokens.size() + 1);
  uint32_t line = 1, lineStart = 0, scanned = 0;
  auto advanceTo = [&](uint32_t offset) {
    for (; scanned < offset; ++scanned)
      if (text[scanned] == '\n') {
        ++line;
        lineStart = scanned + 1;
      }
  };
  for (const LexedToken &t : tokens) {
    if (t.hidden)
      continue;
    advanceTo(t.begin);
    tokens_.emplace_back(this, t.type, t.begin, t.end, tokens_.size(), line, t.begin - lineStart);
  }
  auto size = static_cast<uint32_t>(text.size());
  advanceTo(size);
  tokens_.emplace_back(this, antlr4::Token::EOF, size, size, tokens_.size(), line, size - lineStart);
}

antlr4::Token *TokenArrayStream::LT(ssize_t k) {
  if (k == 0)
    return nullptr;
  ssize_t index = static_cast<ssize_t>(position_) + (k > 0 ? k - 1 : k);
  if (index < 0)
    return nullptr;
  size_t clamped = std::min(static_cast<size_t>(index), tokens_.size() - 1);
  return &tokens_[clamped];
}

antlr4::Token *TokenArrayStream::get(size_t index) const {
  size_t clamped = std::min(index, tokens_.size() - 1);
  return const_cast<ArrayToken *>(&tokens_[clamped]);
}

size_t TokenArrayStream::LA(ssize_t i) {
  antlr4::Token *token = LT(i);
  return token ? token->getType() : static_cast<size_t>(antlr4::Token::INVALID_TYPE);
}

void TokenArrayStream::consume() {
  if (position_ + 1 < tokens_.size())
    ++position_;
}

std::string TokenArrayStream::getText(const antlr4::misc::Interval &interval) {
  if (interval.a < 0 || interval.b < interval.a)
    return {};
  size_t first = static_cast<size_t>(interval.a);
  size_t last = std::min(static_cast<size_t>(interval.b), tokens_.size() - 1);
  if (first > last)
    return {};
  std::string out;
  for (size_t i = first; i <= last && tokens_[i].getType() != antlr4::Token::EOF; ++i) {
    if (!out.empty())
      out += ' ';
    out += tokens_[i].getText();
  }
  return out;
}

std::string TokenArrayStream::getText() {
  return std::string(text_);
}

std::string TokenArrayStream::getText(antlr4::RuleContext *ctx) {
  return ctx ? getText(ctx->getSourceInterval()) : std::string();
}

std::string TokenArrayStream::getText(antlr4::Token *start, antlr4::Token *stop) {
  if (!start || !stop)
    return {};
  return getText(antlr4::misc::Interval(start->getTokenIndex(), stop->getTokenIndex()));
}

std::unique_ptr<antlr4::Token> TokenArrayStream::nextToken() {
  // The parser reads tokens through the stream interface; this exists only
  // to satisfy TokenSource and hands out EOF.
  return std::make_unique<antlr4::CommonToken>(antlr4::Token::EOF);
}

antlr4::TokenFactory<antlr4::CommonToken> *TokenArrayStream::getTokenFactory() {
  return antlr4::CommonTokenFactory::DEFAULT.get();
}

} // namespace netc
