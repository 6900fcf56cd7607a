// SPDX-License-Identifier: BSD-3-Clause
// The filter grammar of connection_filter.h: a tokenizer that the parser pulls from, so that the
// first problem from the left is the one reported, a recursive descent parser into a tree of
// AND / OR / NOT over clauses, and a matcher over that tree.
#include "companion/query/connection_filter.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/connection.h"
#include "companion/query/connection_fields.h"
#include "companion/query/query_syntax.h"
#include "link/name_table.h"
#include "link/text_util.h"

namespace mqc {
namespace detail {

struct FilterNode {
  enum class Kind : std::uint8_t { kClause, kAnd, kOr, kNot };
  Kind kind = Kind::kClause;
  FilterClause clause;               // kClause
  std::vector<FilterNode> children;  // kAnd, kOr: two or more; kNot: one
};

}  // namespace detail

namespace {

using detail::FilterNode;

// A filter in bytes (outside IN lists) may be at most this; bounds the work on input that is not
// UTF-8 (where a run of continuation bytes would count as no characters at all).
constexpr std::size_t kMaxFilterBytes = 4 * kMaxFilterLength;

// Parentheses and negations nest at most this deep: the parser and the matcher recurse.
constexpr int kMaxDepth = 64;

enum class TokenType : std::uint8_t { kEnd, kWord, kString, kOperator, kParenthesis, kComma };

struct Token {
  TokenType type = TokenType::kEnd;
  std::size_t offset = 0;         // byte offset of its first byte
  std::string_view raw;           // as written
  CompareOp op = CompareOp::kEq;  // kOperator
  StringLiteral literal;          // kString
};

bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

bool EndsWord(char c) {
  return IsSpace(c) || c == '"' || c == '=' || c == '!' || c == '<' || c == '>' || c == '(' ||
         c == ')' || c == ',';
}

class Tokenizer {
 public:
  explicit Tokenizer(std::string_view text) : text_(text) {}

  // Reads the next token; false, with *error, on a malformed string literal or operator.
  bool Next(Token* token, SyntaxError* error);

 private:
  bool ReadOperator(Token* token, SyntaxError* error);

  std::string_view text_;
  std::size_t pos_ = 0;
};

bool Tokenizer::Next(Token* token, SyntaxError* error) {
  while (pos_ < text_.size() && IsSpace(text_[pos_])) ++pos_;
  const std::size_t start = pos_;
  token->offset = start;
  if (start == text_.size()) {
    token->type = TokenType::kEnd;
    token->raw = {};
    return true;
  }
  const char c = text_[start];
  if (c == '"') {
    if (!ReadStringLiteral(text_, start, &token->literal, error)) return false;
    token->type = TokenType::kString;
    pos_ = token->literal.end;
  } else if (c == '(' || c == ')') {
    token->type = TokenType::kParenthesis;
    ++pos_;
  } else if (c == ',') {
    token->type = TokenType::kComma;
    ++pos_;
  } else if (c == '=' || c == '!' || c == '<' || c == '>') {
    if (!ReadOperator(token, error)) return false;
  } else {
    token->type = TokenType::kWord;
    while (pos_ < text_.size() && !EndsWord(text_[pos_])) ++pos_;
  }
  token->raw = text_.substr(start, pos_ - start);
  return true;
}

bool Tokenizer::ReadOperator(Token* token, SyntaxError* error) {
  const char c = text_[pos_];
  const bool then_equals = pos_ + 1 < text_.size() && text_[pos_ + 1] == '=';
  token->type = TokenType::kOperator;
  switch (c) {
    case '=':
      token->op = CompareOp::kEq;
      ++pos_;
      return true;
    case '!':
      if (!then_equals) {
        *error = {pos_, "Expected '=' after '!' (the operator is !=)"};
        return false;
      }
      token->op = CompareOp::kNe;
      break;
    case '<':
      token->op = then_equals ? CompareOp::kLe : CompareOp::kLt;
      break;
    default:
      token->op = then_equals ? CompareOp::kGe : CompareOp::kGt;
      break;
  }
  pos_ += then_equals ? 2 : 1;
  return true;
}

// How a token reads in an error message.
std::string Describe(const Token& token) {
  switch (token.type) {
    case TokenType::kEnd:
      return "end of filter";
    case TokenType::kString:
      return "quoted " + Excerpt(token.raw);
    case TokenType::kWord:
    case TokenType::kOperator:
    case TokenType::kParenthesis:
    case TokenType::kComma:
      break;
  }
  return "'" + Excerpt(token.raw) + "'";
}

bool IsOrdering(CompareOp op) {
  return op != CompareOp::kEq && op != CompareOp::kNe && op != CompareOp::kIn;
}

bool IsWord(const Token& token, std::string_view word) {
  return token.type == TokenType::kWord && token.raw == word;
}

bool IsParenthesis(const Token& token, char which) {
  return token.type == TokenType::kParenthesis && token.raw.front() == which;
}

// A keyword written in another case ("and", "Or"): the upper case form, else empty.
std::string_view MiscasedKeyword(const Token& token) {
  if (token.type != TokenType::kWord) return {};
  for (const std::string_view keyword : {"AND", "OR", "NOT", "IN"}) {
    if (token.raw != keyword && EqualsIgnoreAsciiCase(token.raw, keyword)) return keyword;
  }
  return {};
}

// What an unquoted value of a kind is called in "Expected an unquoted ..." messages.
// Every integer kind is "integer" (a string field never asks: its values are quoted).
constexpr NamedValue<FieldKind> kKindNouns[] = {
    {FieldKind::kBool, "boolean (true or false)"},
    {FieldKind::kEnum, "enum name"},
    {FieldKind::kTimestamp, "RFC 3339 timestamp"},
    {FieldKind::kDuration, "duration"},
};

std::string_view KindNoun(FieldKind kind) { return NameOf(kKindNouns, kind, "integer"); }

// A byte range of the text that the length limits leave out: the values of one IN list.
struct Span {
  std::size_t begin = 0;
  std::size_t end = 0;
};

class Parser {
 public:
  Parser(std::string_view text, std::string* error) : text_(text), tokens_(text), error_(error) {}

  bool Parse(std::unique_ptr<FilterNode>* root);

  // Where the error Parse reported is (a byte offset), and the IN lists read up to there.
  std::size_t error_offset() const { return error_offset_; }
  const std::vector<Span>& in_lists() const { return in_lists_; }

 private:
  bool Advance();
  bool Fail(std::size_t offset, const std::string& message);
  bool ParseOr(int depth, FilterNode* node);
  bool ParseAnd(int depth, FilterNode* node);
  bool ParseUnary(int depth, FilterNode* node);
  bool ParsePrimary(int depth, FilterNode* node);
  template <typename ParseOperand>
  bool ParseJoined(std::string_view keyword, FilterNode::Kind kind, FilterNode* node,
                   ParseOperand parse_operand);
  bool ParseClause(FilterClause* clause);
  bool ParseField(FilterClause* clause);
  bool ParseOperator(FilterClause* clause);
  bool ParseInList(FilterClause* clause);
  bool ParseInValues(FilterClause* clause);
  bool AddInValue(FilterClause* clause);
  bool ParseValue(FilterClause* clause);
  bool ParseWordValue(FilterClause* clause);
  bool TakeNanos(const StatusOr<std::int64_t>& nanos, const char* kind, const char* example,
                 FilterClause* clause);
  bool FailAfterTerm(std::string_view expected);

  std::string_view text_;
  Tokenizer tokens_;
  Token token_;             // the current token: the first one not read yet
  std::string_view field_;  // the field of the current clause, as written
  std::string* error_;
  std::size_t error_offset_ = 0;
  std::vector<Span> in_lists_;
};

bool Parser::Fail(std::size_t offset, const std::string& message) {
  *error_ = message + AtPosition(text_, offset);
  error_offset_ = offset;
  return false;
}

bool Parser::Advance() {
  SyntaxError error;
  if (!tokens_.Next(&token_, &error)) return Fail(error.offset, error.message);
  return true;
}

bool Parser::Parse(std::unique_ptr<FilterNode>* root) {
  if (!Advance()) return false;
  if (token_.type == TokenType::kEnd) return true;
  auto node = std::make_unique<FilterNode>();
  if (!ParseOr(0, node.get())) return false;
  if (token_.type != TokenType::kEnd) {
    if (IsParenthesis(token_, ')')) return Fail(token_.offset, "Unmatched ')'");
    return FailAfterTerm("AND, OR or end of filter");
  }
  *root = std::move(node);
  return true;
}

// What follows a term is not what may follow it.
bool Parser::FailAfterTerm(std::string_view expected) {
  const std::string_view keyword = MiscasedKeyword(token_);
  if (!keyword.empty()) {
    return Fail(token_.offset, "'" + std::string(token_.raw) + "' is not supported: write " +
                                   std::string(keyword) + " in upper case");
  }
  return Fail(token_.offset, "Expected " + std::string(expected) + ", got " + Describe(token_));
}

// `operand ( keyword operand )*` as one n-ary node of `kind`, or the operand alone.
template <typename ParseOperand>
bool Parser::ParseJoined(std::string_view keyword, FilterNode::Kind kind, FilterNode* node,
                         ParseOperand parse_operand) {
  if (!parse_operand(node)) return false;
  if (!IsWord(token_, keyword)) return true;
  FilterNode joined;
  joined.kind = kind;
  joined.children.push_back(std::move(*node));
  while (IsWord(token_, keyword)) {
    if (!Advance()) return false;
    if (token_.type == TokenType::kEnd) {
      return Fail(token_.offset,
                  "Expected a field name after " + std::string(keyword) + ", got end of filter");
    }
    joined.children.emplace_back();
    if (!parse_operand(&joined.children.back())) return false;
  }
  *node = std::move(joined);
  return true;
}

bool Parser::ParseOr(int depth, FilterNode* node) {
  return ParseJoined("OR", FilterNode::Kind::kOr, node,
                     [this, depth](FilterNode* operand) { return ParseAnd(depth, operand); });
}

bool Parser::ParseAnd(int depth, FilterNode* node) {
  return ParseJoined("AND", FilterNode::Kind::kAnd, node,
                     [this, depth](FilterNode* operand) { return ParseUnary(depth, operand); });
}

bool Parser::ParseUnary(int depth, FilterNode* node) {
  if (depth >= kMaxDepth) {
    return Fail(token_.offset,
                "Parentheses and negations nest deeper than " + std::to_string(kMaxDepth));
  }
  const bool not_keyword = IsWord(token_, "NOT");
  const bool minus = token_.type == TokenType::kWord && token_.raw.front() == '-';
  if (!not_keyword && !minus) return ParsePrimary(depth, node);
  const std::size_t offset = token_.offset;
  if (not_keyword) {
    if (!Advance()) return false;
    if (token_.type == TokenType::kEnd) {
      return Fail(token_.offset, "Expected a field name or '(' after NOT, got end of filter");
    }
  } else if (token_.raw.size() > 1) {
    token_.raw.remove_prefix(1);  // `-field`: the rest of the word is what is negated
    ++token_.offset;
  } else {
    const bool then_parenthesis = offset + 1 < text_.size() && text_[offset + 1] == '(';
    if (!then_parenthesis) {
      return Fail(offset, "Expected a field name or '(' right after '-' (no space between)");
    }
    if (!Advance()) return false;
  }
  FilterNode negated;
  negated.kind = FilterNode::Kind::kNot;
  negated.children.emplace_back();
  if (!ParseUnary(depth + 1, &negated.children.back())) return false;
  *node = std::move(negated);
  return true;
}

bool Parser::ParsePrimary(int depth, FilterNode* node) {
  if (!IsParenthesis(token_, '(')) {
    node->kind = FilterNode::Kind::kClause;
    return ParseClause(&node->clause);
  }
  const std::size_t open = token_.offset;
  if (!Advance()) return false;
  if (IsParenthesis(token_, ')')) {
    return Fail(token_.offset, "Expected a field name, NOT or '(' inside parentheses, got ')'");
  }
  if (token_.type == TokenType::kEnd) {
    return Fail(token_.offset, "Expected a field name after '(', got end of filter");
  }
  if (!ParseOr(depth + 1, node)) return false;
  if (!IsParenthesis(token_, ')')) {
    if (token_.type == TokenType::kEnd) {
      return Fail(token_.offset, "Expected ')' to close the '('" + AtPosition(text_, open) +
                                     ", got end of filter");
    }
    return FailAfterTerm("AND, OR or ')'");
  }
  return Advance();
}

bool Parser::ParseClause(FilterClause* clause) {
  if (!ParseField(clause)) return false;
  if (!Advance()) return false;
  if (IsWord(token_, "IN")) return ParseInList(clause);
  if (!ParseOperator(clause)) return false;
  return Advance() && ParseValue(clause) && Advance();
}

bool Parser::ParseField(FilterClause* clause) {
  if (token_.type != TokenType::kWord) {
    return Fail(token_.offset, "Expected a field name, got " + Describe(token_));
  }
  const std::string_view word = token_.raw;
  if (word == "AND" || word == "OR" || word == "IN") {
    return Fail(token_.offset, "Expected a field name, got " + Describe(token_));
  }
  if (word.front() == '-') {
    return Fail(token_.offset, "Expected a field name, got " + Describe(token_));
  }
  const std::size_t colon = word.find(':');
  if (colon != std::string_view::npos) {
    return Fail(token_.offset + colon, "The ':' (has) operator is not supported");
  }
  clause->field = FindField(word);
  if (clause->field == nullptr) {
    const std::string_view keyword = MiscasedKeyword(token_);
    if (!keyword.empty()) {
      return Fail(token_.offset, "'" + std::string(word) + "' is not supported: write " +
                                     std::string(keyword) + " in upper case");
    }
    return Fail(token_.offset, "Unknown field '" + Excerpt(word) + "'");
  }
  field_ = word;
  return true;
}

bool Parser::ParseOperator(FilterClause* clause) {
  if (token_.type == TokenType::kWord && token_.raw.front() == ':') {
    return Fail(token_.offset, "The ':' (has) operator is not supported");
  }
  if (token_.type == TokenType::kWord && EqualsIgnoreAsciiCase(token_.raw, "IN")) {
    return Fail(token_.offset,
                "'" + std::string(token_.raw) + "' is not supported: write IN in upper case");
  }
  if (token_.type != TokenType::kOperator) {
    return Fail(token_.offset, "Expected an operator (=, !=, <, <=, >, >=, IN) after field '" +
                                   std::string(field_) + "', got " + Describe(token_));
  }
  const FieldKind kind = clause->field->kind;
  if (IsOrdering(token_.op) && (kind == FieldKind::kEnum || kind == FieldKind::kBool)) {
    return Fail(token_.offset, "Operator '" + std::string(token_.raw) + "' is not supported for " +
                                   (kind == FieldKind::kEnum ? "enum" : "bool") + " field '" +
                                   std::string(field_) + "' (only =, != and IN)");
  }
  clause->op = token_.op;
  return true;
}

// `IN ( value, ... )`, the current token being IN; leaves the token after ')' current.
bool Parser::ParseInList(FilterClause* clause) {
  clause->op = CompareOp::kIn;
  if (!Advance()) return false;
  if (!IsParenthesis(token_, '(')) {
    return Fail(token_.offset, "Expected '(' after IN, got " + Describe(token_));
  }
  const std::size_t begin = token_.offset + 1;
  const bool read = ParseInValues(clause);
  // The list so far is left out of the length count, also when it is where the error is.
  in_lists_.push_back({begin, read ? token_.offset : error_offset_});
  return read && Advance();
}

// The values and the closing ')' (left current) of an IN list, the '(' being current.
bool Parser::ParseInValues(FilterClause* clause) {
  for (std::size_t count = 0;; ++count) {
    if (!Advance()) return false;
    if (count == 0 && IsParenthesis(token_, ')')) {
      return Fail(token_.offset, "Expected a value in the IN list of field '" +
                                     std::string(field_) + "', got ')' (an empty list)");
    }
    if (count == kMaxInValues) {
      return Fail(token_.offset, "The IN list of field '" + std::string(field_) +
                                     "' has more than " + std::to_string(kMaxInValues) + " values");
    }
    if (!AddInValue(clause)) return false;
    if (!Advance()) return false;
    if (IsParenthesis(token_, ')')) return true;
    if (token_.type != TokenType::kComma) {
      if (token_.type == TokenType::kEnd) {
        return Fail(token_.offset, "Expected ',' or ')' in the IN list of field '" +
                                       std::string(field_) + "', got end of filter");
      }
      return Fail(token_.offset, "Expected ',' or ')' in the IN list of field '" +
                                     std::string(field_) + "', got " + Describe(token_));
    }
  }
}

// The current token as one value of the IN list.
bool Parser::AddInValue(FilterClause* clause) {
  FilterClause value;
  value.field = clause->field;
  value.op = CompareOp::kEq;
  if (!ParseValue(&value)) return false;
  InValues& in = clause->in;
  switch (SlotOf(clause->field->kind)) {
    case ValueSlot::kText:
      (value.prefix ? in.prefixes : in.texts).push_back(std::move(value.text));
      break;
    case ValueSlot::kSigned:
      in.numbers.push_back(value.number);
      break;
    case ValueSlot::kUnsigned:
      in.unsigned_numbers.push_back(value.unsigned_number);
      break;
  }
  return true;
}

bool Parser::ParseValue(FilterClause* clause) {
  const std::string field = "'" + std::string(field_) + "'";
  if (token_.type != TokenType::kWord && token_.type != TokenType::kString) {
    return Fail(token_.offset, "Expected a value for field " + field + ", got " + Describe(token_));
  }
  const FieldKind kind = clause->field->kind;
  if (kind == FieldKind::kString) {
    if (token_.type != TokenType::kString) {
      return Fail(token_.offset, "Expected quoted literal for field " + field + ", got unquoted " +
                                     Describe(token_));
    }
    if (token_.literal.prefix && IsOrdering(clause->op)) {
      return Fail(token_.offset,
                  "A prefix match (a trailing '*') works only with =, != and IN (field " + field +
                      "); write \\* for a literal star");
    }
    clause->text = std::move(token_.literal.value);
    clause->prefix = token_.literal.prefix;
    return true;
  }
  if (token_.type == TokenType::kString) {
    return Fail(token_.offset, "Expected an unquoted " + std::string(KindNoun(kind)) +
                                   " for field " + field + ", got " + Describe(token_));
  }
  return ParseWordValue(clause);
}

// A timestamp's or a duration's value (`kind`): its nanoseconds, or why not, with an example.
bool Parser::TakeNanos(const StatusOr<std::int64_t>& nanos, const char* kind, const char* example,
                       FilterClause* clause) {
  if (!nanos.ok()) {
    return Fail(token_.offset, std::string("Invalid ") + kind + " '" + Excerpt(token_.raw) +
                                   "' for field '" + std::string(field_) +
                                   "': " + nanos.status().message() + " (e.g. " + example + ")");
  }
  clause->number = *nanos;
  return true;
}

bool Parser::ParseWordValue(FilterClause* clause) {
  const FieldDef& def = *clause->field;
  const std::string_view word = token_.raw;
  const std::string field = "'" + std::string(field_) + "'";
  const std::string got = "'" + Excerpt(word) + "'";
  NumberStatus status = NumberStatus::kOk;
  switch (def.kind) {
    case FieldKind::kInt:
      status = ParseInt64(word, &clause->number);
      break;
    case FieldKind::kUint:
      if (word.front() == '-' && ParseInt64(word, &clause->number) != NumberStatus::kNotANumber) {
        return Fail(token_.offset,
                    "Expected a non-negative integer for field " + field + ", got " + got);
      }
      status = ParseUint64(word, &clause->unsigned_number);
      break;
    case FieldKind::kBool:
      if (word != "true" && word != "false") {
        return Fail(token_.offset, "Expected true or false for field " + field + ", got " + got);
      }
      clause->number = word == "true" ? 1 : 0;
      return true;
    case FieldKind::kEnum:
      if (FindEnumNumber(def, word, &clause->number)) return true;
      return Fail(token_.offset,
                  "Unknown value " + got + " for enum field " + field + "; expected one of " +
                      EnumNameList(def) +
                      (def.short_prefix.empty() ? std::string()
                                                : " (the " + std::string(def.short_prefix) +
                                                      " prefix may be left out)"));
    case FieldKind::kTimestamp:
      return TakeNanos(ParseTimestamp(word), "timestamp", "2026-01-01T00:00:00Z", clause);
    case FieldKind::kDuration:
      return TakeNanos(ParseDuration(word), "duration", "30s, 100ms, 1.5s, 2m, 1h", clause);
    case FieldKind::kString:
      break;  // handled by ParseValue
  }
  if (status == NumberStatus::kNotANumber) {
    return Fail(token_.offset, "Expected an integer for field " + field + ", got " + got);
  }
  if (status == NumberStatus::kOutOfRange) {
    return Fail(token_.offset, "Integer " + got + " is out of range for field " + field);
  }
  return true;
}

// Checks the text before `limit` (a byte offset) outside the IN lists: at most kMaxFilterLength
// characters, counted as UTF-8 code points, and kMaxFilterBytes bytes (for non-UTF-8 input).
Status CheckLength(std::string_view text, const std::vector<Span>& in_lists, std::size_t limit) {
  std::size_t characters = 0;
  std::size_t bytes = 0;
  auto list = in_lists.begin();
  for (std::size_t i = 0; i < text.size() && i < limit; ++i) {
    while (list != in_lists.end() && list->end <= i) ++list;
    if (list != in_lists.end() && list->begin <= i) {
      i = list->end - 1;  // past the list's values
      continue;
    }
    const bool starts_character = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (starts_character && ++characters > kMaxFilterLength) {
      return InvalidArgument("Filter is longer than " + std::to_string(kMaxFilterLength) +
                             " characters" + AtPosition(text, i));
    }
    if (bytes++ == kMaxFilterBytes) {
      return InvalidArgument("Filter is longer than " + std::to_string(kMaxFilterBytes) + " bytes" +
                             AtPosition(text, i));
    }
  }
  return Status();
}

bool Satisfies(CompareOp op, int comparison) {
  switch (op) {
    case CompareOp::kEq:
      return comparison == 0;
    case CompareOp::kNe:
      return comparison != 0;
    case CompareOp::kLt:
      return comparison < 0;
    case CompareOp::kLe:
      return comparison <= 0;
    case CompareOp::kGt:
      return comparison > 0;
    case CompareOp::kGe:
    case CompareOp::kIn:  // not asked: InHolds
      break;
  }
  return comparison >= 0;
}

// Whether `value` satisfies `op` against the clause's literal (op may differ from clause.op for
// repeated fields, where != is evaluated as NOT ANY =).
bool Holds(const FilterClause& clause, CompareOp op, const FieldValue& value) {
  if (!value.is_set) return op == CompareOp::kNe;
  if (clause.prefix) {
    const bool starts_with = StartsWith(value.text, clause.text);
    return starts_with == (op == CompareOp::kEq);
  }
  FieldValue literal;
  literal.number = clause.number;
  literal.unsigned_number = clause.unsigned_number;
  literal.text = clause.text;
  return Satisfies(op, CompareFieldValues(clause.field->kind, value, literal));
}

// Whether a set `value` is one of the clause's IN values.
bool InHolds(const FilterClause& clause, const FieldValue& value) {
  if (!value.is_set) return false;
  const InValues& in = clause.in;
  switch (SlotOf(clause.field->kind)) {
    case ValueSlot::kText:
      if (std::binary_search(in.texts.begin(), in.texts.end(), value.text,
                             std::less<std::string_view>())) {
        return true;
      }
      return std::any_of(in.prefixes.begin(), in.prefixes.end(), [&value](const std::string& p) {
        return StartsWith(value.text, p);
      });
    case ValueSlot::kSigned:
      return std::binary_search(in.numbers.begin(), in.numbers.end(), value.number);
    case ValueSlot::kUnsigned:
      break;
  }
  return std::binary_search(in.unsigned_numbers.begin(), in.unsigned_numbers.end(),
                            value.unsigned_number);
}

bool ClauseMatches(const FilterClause& clause, const Connection& connection) {
  const FieldDef& field = *clause.field;
  if (clause.op == CompareOp::kIn) {
    if (!field.repeated()) return InHolds(clause, field.get(connection));
    return std::any_of(connection.subscriptions.begin(), connection.subscriptions.end(),
                       [&](const Subscription& subscription) {
                         return InHolds(clause, field.get_from_subscription(subscription));
                       });
  }
  if (!field.repeated()) return Holds(clause, clause.op, field.get(connection));
  const auto holds_for = [&](CompareOp op) {
    return [&clause, &field, op](const Subscription& subscription) {
      return Holds(clause, op, field.get_from_subscription(subscription));
    };
  };
  const std::vector<Subscription>& subscriptions = connection.subscriptions;
  if (clause.op == CompareOp::kNe) {
    return std::none_of(subscriptions.begin(), subscriptions.end(), holds_for(CompareOp::kEq));
  }
  return std::any_of(subscriptions.begin(), subscriptions.end(), holds_for(clause.op));
}

bool NodeMatches(const FilterNode& node, const Connection& connection) {
  const auto matches = [&connection](const FilterNode& child) {
    return NodeMatches(child, connection);
  };
  switch (node.kind) {
    case FilterNode::Kind::kClause:
      return ClauseMatches(node.clause, connection);
    case FilterNode::Kind::kAnd:
      return std::all_of(node.children.begin(), node.children.end(), matches);
    case FilterNode::Kind::kOr:
      return std::any_of(node.children.begin(), node.children.end(), matches);
    case FilterNode::Kind::kNot:
      break;
  }
  return !NodeMatches(node.children.front(), connection);
}

template <typename T>
void SortUnique(std::vector<T>* values) {
  std::sort(values->begin(), values->end());
  values->erase(std::unique(values->begin(), values->end()), values->end());
}

void SortInValues(FilterClause* clause) {
  SortUnique(&clause->in.texts);
  SortUnique(&clause->in.numbers);
  SortUnique(&clause->in.unsigned_numbers);
}

void VisitClauses(const FilterNode& node, const std::function<void(const FilterClause&)>& visit) {
  if (node.kind == FilterNode::Kind::kClause) {
    visit(node.clause);
    return;
  }
  for (const FilterNode& child : node.children) VisitClauses(child, visit);
}

// The exact client ids every match of `node` has one of (unsorted, maybe repeated); false when
// the node does not narrow client_id to a finite set.
bool CollectClientIds(const FilterNode& node, std::vector<std::string_view>* ids) {
  static const FieldDef* const client_id = FindField("client_id");
  switch (node.kind) {
    case FilterNode::Kind::kClause: {
      const FilterClause& clause = node.clause;
      if (clause.field != client_id) return false;
      if (clause.op == CompareOp::kEq && !clause.prefix) {
        ids->push_back(clause.text);
        return true;
      }
      if (clause.op != CompareOp::kIn || !clause.in.prefixes.empty()) return false;
      ids->insert(ids->end(), clause.in.texts.begin(), clause.in.texts.end());
      return true;
    }
    case FilterNode::Kind::kAnd: {
      // Any operand that narrows will do; the one with the fewest ids is the cheapest.
      // *ids may hold an OR's earlier operands: the choice is made apart, then appended.
      bool found = false;
      std::vector<std::string_view> fewest;
      for (const FilterNode& child : node.children) {
        std::vector<std::string_view> child_ids;
        if (CollectClientIds(child, &child_ids) && (!found || child_ids.size() < fewest.size())) {
          fewest = std::move(child_ids);
          found = true;
        }
      }
      ids->insert(ids->end(), fewest.begin(), fewest.end());
      return found;
    }
    case FilterNode::Kind::kOr:
      for (const FilterNode& child : node.children) {
        if (!CollectClientIds(child, ids)) return false;
      }
      return true;
    case FilterNode::Kind::kNot:
      break;
  }
  return false;
}

// Whether every match of `node` has the bool `field` true (see RequiresTrue).
bool RequiresTrueAt(const FilterNode& node, const FieldDef* field) {
  switch (node.kind) {
    case FilterNode::Kind::kClause: {
      const FilterClause& clause = node.clause;
      if (clause.field != field) return false;
      if (clause.op == CompareOp::kEq) return clause.number == 1;
      if (clause.op == CompareOp::kNe) return clause.number == 0;
      if (clause.op == CompareOp::kIn) {
        return !clause.in.numbers.empty() &&
               std::all_of(clause.in.numbers.begin(), clause.in.numbers.end(),
                           [](std::int64_t value) { return value == 1; });
      }
      return false;
    }
    case FilterNode::Kind::kAnd:
      return std::any_of(node.children.begin(), node.children.end(),
                         [field](const FilterNode& child) { return RequiresTrueAt(child, field); });
    case FilterNode::Kind::kOr:
      return std::all_of(node.children.begin(), node.children.end(),
                         [field](const FilterNode& child) { return RequiresTrueAt(child, field); });
    case FilterNode::Kind::kNot:
      break;
  }
  return false;
}

}  // namespace

ConnectionFilter::ConnectionFilter(std::vector<FilterClause> clauses) {
  if (clauses.empty()) return;
  auto root = std::make_shared<FilterNode>();
  for (FilterClause& clause : clauses) SortInValues(&clause);
  if (clauses.size() == 1) {
    root->clause = std::move(clauses.front());
  } else {
    root->kind = FilterNode::Kind::kAnd;
    for (FilterClause& clause : clauses) {
      root->children.emplace_back();
      root->children.back().clause = std::move(clause);
    }
  }
  root_ = std::move(root);
}

Status ConnectionFilter::Parse(std::string_view text, ConnectionFilter* filter) {
  filter->root_.reset();
  if (text.size() > kMaxFilterTextBytes) {
    return Status(StatusCode::kInvalidArgument, "Filter is longer than " +
                                                    std::to_string(kMaxFilterTextBytes) + " bytes" +
                                                    AtPosition(text, kMaxFilterTextBytes));
  }
  std::string error;
  std::unique_ptr<FilterNode> root;
  Parser parser(text, &error);
  const bool parsed = parser.Parse(&root);
  // A length problem before the syntax error (or anywhere, without one) is the first problem.
  const std::size_t checked_up_to = parsed ? text.size() : parser.error_offset();
  const Status length = CheckLength(text, parser.in_lists(), checked_up_to);
  if (!length.ok()) return length;
  if (!parsed) return Status(StatusCode::kInvalidArgument, std::move(error));
  if (root != nullptr) {
    std::function<void(FilterNode*)> sort_values = [&sort_values](FilterNode* node) {
      SortInValues(&node->clause);
      for (FilterNode& child : node->children) sort_values(&child);
    };
    sort_values(root.get());
    filter->root_ = std::move(root);
  }
  return Status();
}

bool ConnectionFilter::Matches(const Connection& connection) const {
  return root_ == nullptr || NodeMatches(*root_, connection);
}

void ConnectionFilter::ForEachClause(const std::function<void(const FilterClause&)>& visit) const {
  if (root_ != nullptr) VisitClauses(*root_, visit);
}

bool ConnectionFilter::NamesDetail() const {
  bool detail = false;
  ForEachClause([&detail](const FilterClause& clause) { detail = detail || clause.field->detail; });
  return detail;
}

bool ConnectionFilter::ClientIdCandidates(std::vector<std::string_view>* client_ids) const {
  client_ids->clear();
  if (root_ == nullptr || !CollectClientIds(*root_, client_ids)) {
    client_ids->clear();
    return false;
  }
  SortUnique(client_ids);
  return true;
}

bool ConnectionFilter::RequiresTrue(const FieldDef* field) const {
  return root_ != nullptr && RequiresTrueAt(*root_, field);
}

bool ConnectionFilter::Names(const FieldDef* field) const {
  bool found = false;
  ForEachClause([field, &found](const FilterClause& clause) { found |= clause.field == field; });
  return found;
}

}  // namespace mqc
