// TokenArrayStream.h -- feeds the ANTLR-generated parser from netc's own
// lexer: the tokens live in one contiguous array (no allocation per token,
// no whitespace tokens), and token start/stop indices are byte offsets.
// Internal to the front end; only the parser driver and its tests use it.
#pragma once

#include "frontend/Lexer.h"

#include "antlr4-runtime.h"

#include <string>
#include <string_view>
#include <vector>

namespace netc {

class TokenArrayStream;

/// One token of the array, in the shape ANTLR's parser expects.
class ArrayToken final : public antlr4::Token {
public:
  ArrayToken(const TokenArrayStream *stream, size_t type, uint32_t begin, uint32_t end, size_t index,
             uint32_t line, uint32_t column)
      : stream_(stream), type_(type), begin_(begin), end_(end), index_(index), line_(line), column_(column) {}

  std::string getText() const override;
  /// The token's bytes in the source, without a copy (a NUMBER_LIST token
  /// may span megabytes).
  std::string_view sourceText() const;
  size_t getType() const override { return type_; }
  size_t getLine() const override { return line_; }
  size_t getCharPositionInLine() const override { return column_; }
  size_t getChannel() const override { return DEFAULT_CHANNEL; }
  size_t getTokenIndex() const override { return index_; }
  /// Byte offset of the first byte (end - 1 for the last: ANTLR's stop is inclusive).
  size_t getStartIndex() const override { return begin_; }
  size_t getStopIndex() const override { return end_ == begin_ ? begin_ : end_ - 1; }
  antlr4::TokenSource *getTokenSource() const override;
  antlr4::CharStream *getInputStream() const override { return nullptr; }
  std::string toString() const override { return getText(); }

  /// The token's type after error recovery has reinterpreted it (a
  /// misspelled keyword taken as the keyword).
  void setType(size_t type) { type_ = type; }

private:
  const TokenArrayStream *stream_;
  size_t type_; // antlr4::Token::EOF is size_t(-1)
  uint32_t begin_, end_;
  size_t index_;
  uint32_t line_, column_;
};

/// The parser's token stream: the non-hidden tokens of one source, then EOF.
class TokenArrayStream final : public antlr4::TokenStream, public antlr4::TokenSource {
public:
  TokenArrayStream(std::string_view text, const std::vector<LexedToken> &tokens, std::string sourceName);

  std::string_view text() const { return text_; }

  // TokenStream
  antlr4::Token *LT(ssize_t k) override;
  antlr4::Token *get(size_t index) const override;
  antlr4::TokenSource *getTokenSource() const override { return const_cast<TokenArrayStream *>(this); }
  std::string getText(const antlr4::misc::Interval &interval) override;
  std::string getText() override;
  std::string getText(antlr4::RuleContext *ctx) override;
  std::string getText(antlr4::Token *start, antlr4::Token *stop) override;

  // IntStream
  void consume() override;
  size_t LA(ssize_t i) override;
  ssize_t mark() override { return -1; }
  void release(ssize_t) override {}
  size_t index() override { return position_; }
  void seek(size_t index) override { position_ = index < tokens_.size() ? index : tokens_.size() - 1; }
  size_t size() override { return tokens_.size(); }
  std::string getSourceName() const override { return sourceName_; }

  // TokenSource (for the tokens ANTLR conjures while recovering)
  std::unique_ptr<antlr4::Token> nextToken() override;
  size_t getLine() const override { return 0; }
  size_t getCharPositionInLine() override { return 0; }
  antlr4::CharStream *getInputStream() override { return nullptr; }
  std::string getSourceName() override { return sourceName_; }
  antlr4::TokenFactory<antlr4::CommonToken> *getTokenFactory() override;

private:
  std::string_view text_;
  std::vector<ArrayToken> tokens_; // the last one is EOF
  size_t position_ = 0;
  std::string sourceName_;
};

} // namespace netc
