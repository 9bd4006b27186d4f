# The operations of server/service.h (service.c, service_cdc.c, changeset.c), called
# directly against a real engine on the PostgreSQL fixture: every rule of every operation
# (required fields, counts, producer and offset, columns, file ids, snapshot bounds, page
# limits, the table lookup, filters, erasure, CDC routing and checks) and the results, once
# for both wires (the HTTP and gRPC tests check their codecs).
strike_unit_test(test_service PG SOURCES unit/test_service.c LIBS strike_enginetest strike_server
                 LABELS tsan)
