# Auth (issue 18): bearer tokens, scopes per table, the audit trail, SIGHUP.
#   test_auth (unit)   the tokens file, bearer headers, globs, reload (tests/unit/test_auth.c)
#   auth               every route (from `striked --list-routes`) and every RPC (from the
#                      proto) without a token, with an unknown one, with each scope on a
#                      matching and another table; list filtering; audit lines; SIGHUP
strike_py_test(auth test_auth.py LABELS auth)
set_tests_properties(auth PROPERTIES FIXTURES_REQUIRED "pg;grpc_py")
#   tls                TLS on both listeners with certificates made by openssl at test time:
#                      curl --cacert, grpcio ssl_channel_credentials, TLS 1.2+ only,
#                      plain text refused, SIGHUP reload, bad pairs, tokens over TLS
strike_py_test(tls test_tls.py LABELS auth)
set_tests_properties(tls PROPERTIES FIXTURES_REQUIRED "pg;grpc_py")
#   hostile            raw-socket framing attacks (duplicate Content-Length, TE with CL),
#                      libmicrohttpd's own refusals (bad Content-Length, chunk sizes, headers),
#                      gRPC metadata over its limit: the status, the close, nothing changed
strike_py_test(hostile test_hostile.py LABELS auth)
set_tests_properties(hostile PROPERTIES FIXTURES_REQUIRED "pg;grpc_py")
