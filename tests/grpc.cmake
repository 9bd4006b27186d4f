# gRPC front end (issue 7): python grpcio (Debian's, /usr/bin/python3) against
# the real striked. Message classes come from protoc --python_out at build
# time; the client calls methods by path, without generated stubs.
find_program(STRIKE_PROTOC protoc REQUIRED)
set(STRIKE_PY_PROTO_DIR ${CMAKE_BINARY_DIR}/py)
set(STRIKE_PROTO_FILE ${CMAKE_SOURCE_DIR}/proto/strike/v1/strike.proto)
add_custom_command(
  OUTPUT ${STRIKE_PY_PROTO_DIR}/strike/v1/strike_pb2.py
  COMMAND ${CMAKE_COMMAND} -E make_directory ${STRIKE_PY_PROTO_DIR}
  COMMAND ${STRIKE_PROTOC} --python_out=${STRIKE_PY_PROTO_DIR} -I${CMAKE_SOURCE_DIR}/proto
          ${STRIKE_PROTO_FILE}
  DEPENDS ${STRIKE_PROTO_FILE}
  COMMENT "protoc --python_out strike/v1/strike.proto")
add_custom_target(strike_py_proto ALL DEPENDS ${STRIKE_PY_PROTO_DIR}/strike/v1/strike_pb2.py)

# ctest builds the classes itself, so `ctest -R grpc` works after building striked alone.
add_test(NAME grpc_py_proto
         COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target strike_py_proto)
set_tests_properties(grpc_py_proto PROPERTIES FIXTURES_SETUP grpc_py LABELS integration
                     TIMEOUT 120)

strike_py_test(test_grpc test_grpc.py)
set_tests_properties(test_grpc PROPERTIES FIXTURES_REQUIRED "pg;grpc_py")
# Maintenance (issue 14): expiry, expired reads, health, the background task; HTTP and gRPC.
strike_py_test(test_maintenance test_maintenance.py)
set_tests_properties(test_maintenance PROPERTIES FIXTURES_REQUIRED "pg;grpc_py")

# Benchmark (not a test): tests/bench/bench_grpc_dv.py drives it; see that file.
add_executable(bench_grpc_dv ${CMAKE_CURRENT_SOURCE_DIR}/bench/bench_grpc_dv.c)
target_link_libraries(bench_grpc_dv PRIVATE PkgConfig::GRPC strike_proto Threads::Threads)
# Its peer (bench e7): the same method on the same core, answering fixed bytes.
add_executable(grpc_dv_peer ${CMAKE_CURRENT_SOURCE_DIR}/bench/grpc_dv_peer.c)
target_link_libraries(grpc_dv_peer PRIVATE PkgConfig::GRPC strike_proto Threads::Threads)

# Compaction and erasure over HTTP and gRPC, kill -9 in the middle (issue 14).
strike_py_test(test_erasure test_erasure.py TIMEOUT 600)
set_tests_properties(test_erasure PROPERTIES FIXTURES_REQUIRED "pg;grpc_py")
# 8 writers on 2 servers while both compact in a loop (issue 14).
strike_py_test(test_compact_concurrency test_compact_concurrency.py TIMEOUT 300)
# grpc_s3: the same program on the S3 blob store (the s3 fixture's moto_server): every RPC,
# and PlanScan's presigned URLs fetched from the store, an expired one refused (PlanPresign)
strike_on_s3(test_grpc grpc_s3 ${STRIKE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_grpc.py)
