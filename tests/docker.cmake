# The docker image (docker/Dockerfile), checked without a Docker engine by
# scripts/check-docker.sh: the build stage's apt packages (with their
# dependencies) hold every pkg-config module and find_* of the CMake files it
# copies, and the runtime stage's every library the built striked and strike
# load. No PostgreSQL; apt-cache reads the local lists (none: a failure).
#   docker_check           the check on docker/Dockerfile and this tree's binaries
#   docker_check_selftest  the check on broken copies of the Dockerfile: each gap
#                          (build, runtime, unknown package, empty apt lists) fails
add_test(NAME docker_check COMMAND ${CMAKE_SOURCE_DIR}/scripts/check-docker.sh
         --bin-dir ${CMAKE_BINARY_DIR}/bin)
set_tests_properties(docker_check PROPERTIES LABELS docker TIMEOUT 120)
add_test(NAME docker_check_selftest
         COMMAND ${STRIKE_PYTHON} ${CMAKE_CURRENT_SOURCE_DIR}/integration/test_check_docker.py)
set_tests_properties(docker_check_selftest PROPERTIES LABELS docker TIMEOUT 300
  ENVIRONMENT "${STRIKE_TEST_ENV};PYTHONPATH=${CMAKE_CURRENT_SOURCE_DIR}/integration;PYTHONDONTWRITEBYTECODE=1")
