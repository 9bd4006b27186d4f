# Clients (clients/): libstrike and the `strike` client commands against the
# real striked and PostgreSQL.
#   libstrike    tests/client/test_libstrike.c (cmocka; every operation, errors,
#                idempotency, 4 threads on one handle, retries of a 503 while
#                the catalog is down), run by test_libstrike.py
#   cli_client   every client command, output format and exit code; a load
#                killed and resumed; --where against a Python evaluation
add_executable(test_libstrike client/test_libstrike.c)
target_link_libraries(test_libstrike PRIVATE strike_client PkgConfig::CMOCKA)
add_dependencies(tsan_tests test_libstrike)
strike_py_test(libstrike test_libstrike.py LABELS client tsan)
strike_py_test(cli_client test_cli_client.py LABELS client TIMEOUT 900)
#   ui           GET /ui in Debian's chromium via puppeteer-core (test_ui.py,
#                ui_browser.cjs): no console error, a created table, its bar
#                chart after a delete, a screenshot BUILD_DIR/ui-health.png
strike_py_test(ui test_ui.py LABELS client)
