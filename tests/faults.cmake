# Fault tests (issue 13): each starts its own striked, and its own PostgreSQL
# cluster when it kills or stops it (tests/integration/pgcluster.py).
#   faults     kill -9 of the postmaster during a CDC ingest; SIGSTOP of
#              PostgreSQL for 15 s; the blob store (a tmpfs: root) full; kill -9
#              of striked during a CDC ingest, restarted on the same store
#   faults_s3  the two kill -9 tests (of the postmaster, of striked) once more with
#              the blob store on S3 (the s3 fixture's moto_server)
# About 60 s with the ASan build; the timeout bounds a hang.
strike_py_test(faults test_faults.py TIMEOUT 240)
strike_on_s3(faults faults_s3 ${STRIKE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_faults.py
             CatalogKilled StrikedKilled)
