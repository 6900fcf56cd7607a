// SPDX-License-Identifier: BSD-3-Clause
// QuoteFilterString for the tests, the fuzz target and the benchmark that build filters from
// values: the product's own (companion/query/query_syntax.h), which the round trip in
// query_syntax_test and the connection_query fuzz target keep in step with ReadStringLiteral.
#pragma once

#include "companion/query/query_syntax.h"
