// SPDX-License-Identifier: BSD-3-Clause
// The filter grammar of connection_filter.h: a tokenizer that the parser pulls from, so that the
// first problem from the left is the one reported, and a matcher over the parsed clauses.
#include "companion/query/connection_filter.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "companion/query/connection_fields.h"
#include "companion/query/query_syntax.h"
#include "link/connection.h"
#include "link/text_util.h"

namespace mqc {
namespace {

// A filter in bytes may be at most this; bounds the work on input that is not UTF-8 (where a
// run of continuation bytes would count as no characters at all).
constexpr std::size_t kMaxFilterBytes = 4 * kMaxFilterLength;

enum class TokenType : std::uint8_t { kEnd, kWord, kString, kOperator, kParenthesis };

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
         c == ')';
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
      break;
  }
  return "'" + Excerpt(token.raw) + "'";
}

bool IsOrdering(CompareOp op) { return op != CompareOp::kEq && op != CompareOp::kNe; }

// What an unquoted value of a kind is called in "Expected an unquoted ..." messages.
std::string_view KindNoun(FieldKind kind) {
  switch (kind) {
    case FieldKind::kBool:
      return "boolean (true or false)";
    case FieldKind::kEnum:
      return "enum name";
    case FieldKind::kTimestamp:
      return "RFC 3339 timestamp";
    case FieldKind::kDuration:
      return "duration";
    case FieldKind::kString:
    case FieldKind::kInt:
    case FieldKind::kUint:
      break;
  }
  return "integer";
}

class Parser {
 public:
  Parser(std::string_view text, std::string* error) : text_(text), tokens_(text), error_(error) {}

  bool Parse(std::vector<FilterClause>* clauses);

 private:
  bool Advance();
  bool Fail(std::size_t offset, const std::string& message);
  bool ParseClause(FilterClause* clause);
  bool ParseField(FilterClause* clause);
  bool ParseOperator(FilterClause* clause);
  bool ParseValue(FilterClause* clause);
  bool ParseWordValue(FilterClause* clause);
  bool FailAfterClause();

  std::string_view text_;
  Tokenizer tokens_;
  Token token_;             // the current token
  std::string_view field_;  // the field of the current clause, as written
  std::string* error_;
};

bool Parser::Fail(std::size_t offset, const std::string& message) {
  *error_ = message + AtPosition(text_, offset);
  return false;
}

// Reads the next token into token_. Parentheses are refused as soon as they are seen.
bool Parser::Advance() {
  SyntaxError error;
  if (!tokens_.Next(&token_, &error)) return Fail(error.offset, error.message);
  if (token_.type == TokenType::kParenthesis) {
    return Fail(token_.offset, "Parentheses are not supported");
  }
  return true;
}

bool Parser::Parse(std::vector<FilterClause>* clauses) {
  if (!Advance()) return false;
  if (token_.type == TokenType::kEnd) return true;
  while (true) {
    FilterClause clause;
    if (!ParseClause(&clause)) return false;
    clauses->push_back(std::move(clause));
    if (!Advance()) return false;
    if (token_.type == TokenType::kEnd) return true;
    if (token_.type != TokenType::kWord || token_.raw != "AND") return FailAfterClause();
    if (!Advance()) return false;
    if (token_.type == TokenType::kEnd) {
      return Fail(token_.offset, "Expected a field name after AND, got end of filter");
    }
  }
}

// What follows a clause is neither AND nor the end.
bool Parser::FailAfterClause() {
  if (token_.type == TokenType::kWord) {
    if (EqualsIgnoreAsciiCase(token_.raw, "AND")) {
      return Fail(token_.offset,
                  "'" + std::string(token_.raw) + "' is not supported: write AND in upper case");
    }
    if (EqualsIgnoreAsciiCase(token_.raw, "OR")) {
      return Fail(token_.offset, "OR is not supported: clauses can only be joined by AND");
    }
    if (EqualsIgnoreAsciiCase(token_.raw, "NOT")) {
      return Fail(token_.offset, "NOT is not supported");
    }
  }
  return Fail(token_.offset, "Expected AND or end of filter, got " + Describe(token_));
}

bool Parser::ParseClause(FilterClause* clause) {
  if (!ParseField(clause)) return false;
  if (!Advance() || !ParseOperator(clause)) return false;
  return Advance() && ParseValue(clause);
}

bool Parser::ParseField(FilterClause* clause) {
  if (token_.type != TokenType::kWord) {
    return Fail(token_.offset, "Expected a field name, got " + Describe(token_));
  }
  const std::string_view word = token_.raw;
  if (word == "NOT") return Fail(token_.offset, "NOT is not supported");
  if (word == "AND" || word == "OR") {
    return Fail(token_.offset, "Expected a field name, got " + Describe(token_));
  }
  if (word.front() == '-') return Fail(token_.offset, "Negation ('-') is not supported");
  const std::size_t colon = word.find(':');
  if (colon != std::string_view::npos) {
    return Fail(token_.offset + colon, "The ':' (has) operator is not supported");
  }
  clause->field = FindField(word);
  if (clause->field == nullptr) {
    return Fail(token_.offset, "Unknown field '" + Excerpt(word) + "'");
  }
  field_ = word;
  return true;
}

bool Parser::ParseOperator(FilterClause* clause) {
  if (token_.type == TokenType::kWord && token_.raw.front() == ':') {
    return Fail(token_.offset, "The ':' (has) operator is not supported");
  }
  if (token_.type != TokenType::kOperator) {
    return Fail(token_.offset, "Expected an operator (=, !=, <, <=, >, >=) after field '" +
                                   std::string(field_) + "', got " + Describe(token_));
  }
  const FieldKind kind = clause->field->kind;
  if (IsOrdering(token_.op) && (kind == FieldKind::kEnum || kind == FieldKind::kBool)) {
    return Fail(token_.offset, "Operator '" + std::string(token_.raw) + "' is not supported for " +
                                   (kind == FieldKind::kEnum ? "enum" : "bool") + " field '" +
                                   std::string(field_) + "' (only = and !=)");
  }
  clause->op = token_.op;
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
                  "A prefix match (a trailing '*') works only with = and != (field " + field +
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

bool Parser::ParseWordValue(FilterClause* clause) {
  const FieldDef& def = *clause->field;
  const std::string_view word = token_.raw;
  const std::string field = "'" + std::string(field_) + "'";
  const std::string got = "'" + Excerpt(word) + "'";
  NumberStatus status = NumberStatus::kOk;
  std::string why;
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
      if (ParseTimestamp(word, &clause->number, &why)) return true;
      return Fail(token_.offset, "Invalid timestamp " + got + " for field " + field + ": " + why +
                                     " (e.g. 2026-01-01T00:00:00Z)");
    case FieldKind::kDuration:
      if (ParseDuration(word, &clause->number, &why)) return true;
      return Fail(token_.offset, "Invalid duration " + got + " for field " + field + ": " + why +
                                     " (e.g. 30s, 100ms, 1.5s, 2m, 1h)");
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

// Characters are counted as UTF-8 code points; see kMaxFilterBytes for non-UTF-8 input.
bool CheckLength(std::string_view text, std::string* error) {
  std::size_t characters = 0;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const bool starts_character = (static_cast<unsigned char>(text[i]) & 0xC0) != 0x80;
    if (starts_character && ++characters > kMaxFilterLength) {
      *error = "Filter is longer than " + std::to_string(kMaxFilterLength) + " characters" +
               AtPosition(text, i);
      return false;
    }
    if (i == kMaxFilterBytes) {
      *error = "Filter is longer than " + std::to_string(kMaxFilterBytes) + " bytes" +
               AtPosition(text, i);
      return false;
    }
  }
  return true;
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
      break;
  }
  return comparison >= 0;
}

// Whether `value` satisfies `op` against the clause's literal (op may differ from clause.op for
// repeated fields, where != is evaluated as NOT ANY =).
bool Holds(const FilterClause& clause, CompareOp op, const FieldValue& value) {
  if (!value.is_set) return op == CompareOp::kNe;
  if (clause.prefix) {
    const bool starts_with = value.text.substr(0, clause.text.size()) == clause.text;
    return starts_with == (op == CompareOp::kEq);
  }
  FieldValue literal;
  literal.number = clause.number;
  literal.unsigned_number = clause.unsigned_number;
  literal.text = clause.text;
  return Satisfies(op, CompareFieldValues(clause.field->kind, value, literal));
}

bool ClauseMatches(const FilterClause& clause, const Connection& connection) {
  const FieldDef& field = *clause.field;
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

}  // namespace

Status ConnectionFilter::Parse(std::string_view text, ConnectionFilter* filter) {
  filter->clauses_.clear();
  std::string error;
  std::vector<FilterClause> clauses;
  if (!CheckLength(text, &error) || !Parser(text, &error).Parse(&clauses)) {
    return Status(StatusCode::kInvalidArgument, std::move(error));
  }
  filter->clauses_ = std::move(clauses);
  return Status();
}

bool ConnectionFilter::Matches(const Connection& connection) const {
  return std::all_of(clauses_.begin(), clauses_.end(), [&connection](const FilterClause& clause) {
    return ClauseMatches(clause, connection);
  });
}

}  // namespace mqc
