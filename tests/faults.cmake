# Fault tests (issue 13): each starts its own PostgreSQL cluster (it kills or
# stops it; tests/integration/pgcluster.py) and its own striked.
#   faults   kill -9 of the postmaster during a CDC ingest; SIGSTOP of
#            PostgreSQL for 15 s; the blob store (a tmpfs: root) full
# About 45 s with the ASan build; the timeout bounds a hang.
strike_py_test(faults test_faults.py TIMEOUT 240)
