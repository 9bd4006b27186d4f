# storage/expr: literals and rows, filters, NDJSON output.
strike_unit_test(test_expr_literal SOURCES unit/test_expr_literal.c LIBS strike_expr m)
# jansson: the filter tests' JSON writer, and the NDJSON tests' independent reader
strike_unit_test(test_expr_filter SOURCES unit/test_expr_filter.c
                 LIBS strike_expr PkgConfig::JANSSON m)
strike_unit_test(test_expr_ndjson SOURCES unit/test_expr_ndjson.c
                 LIBS strike_expr PkgConfig::JANSSON m)
