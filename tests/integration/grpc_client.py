"""grpc_client.py - a python grpcio client for strike.v1.Strike, without stubs.

Messages come from protoc --python_out (tests/grpc.cmake writes them to
$STRIKE_BUILD_DIR/py); methods are called by path with channel.unary_unary /
unary_stream, since Debian has no grpc_tools. Run with /usr/bin/python3.
"""
import os
import sys

import grpc

_py = os.path.join(os.environ.get("STRIKE_BUILD_DIR", ""), "py")
if not os.path.exists(os.path.join(_py, "strike", "v1", "strike_pb2.py")):
    raise RuntimeError(f"{_py}/strike/v1/strike_pb2.py is missing: build the strike_py_proto target")
sys.path.insert(0, _py)

from strike.v1 import strike_pb2 as pb  # noqa: E402

SERVICE = "/strike.v1.Strike/"

UNARY = {
    "CreateTable": (pb.CreateTableRequest, pb.Table),
    "GetTable": (pb.GetTableRequest, pb.Table),
    "ListTables": (pb.ListTablesRequest, pb.ListTablesResponse),
    "DropTable": (pb.DropTableRequest, pb.DropTableResponse),
    "ApplyChanges": (pb.ApplyChangesRequest, pb.ApplyChangesResponse),
    "DeleteWhere": (pb.DeleteWhereRequest, pb.DeleteWhereResponse),
    "PlanScan": (pb.PlanScanRequest, pb.PlanScanResponse),
    "GetDeletionVector": (pb.GetDeletionVectorRequest, pb.DeletionVector),
    "ListSnapshots": (pb.ListSnapshotsRequest, pb.ListSnapshotsResponse),
    "Compact": (pb.CompactRequest, pb.CompactResponse),
    "Expire": (pb.ExpireRequest, pb.ExpireResponse),
    "Erase": (pb.EraseRequest, pb.EraseResponse),
    "GetErasure": (pb.GetErasureRequest, pb.EraseResponse),
    "CheckErasure": (pb.CheckErasureRequest, pb.CheckErasureResponse),
    "TableHealth": (pb.TableHealthRequest, pb.TableHealthResponse),
    "ApplyDebezium": (pb.ApplyDebeziumRequest, pb.ApplyDebeziumResponse),
    "AlterTable": (pb.AlterTableRequest, pb.Table),
}


def value(x, ts=False):
    """A python value as a strike.v1.Value (ts: an int is a timestamp_value)."""
    if x is None:
        return pb.Value(null_value=True)
    if isinstance(x, bool):
        return pb.Value(bool_value=x)
    if isinstance(x, int):
        return pb.Value(timestamp_value=x) if ts else pb.Value(long_value=x)
    if isinstance(x, float):
        return pb.Value(double_value=x)
    if isinstance(x, str):
        return pb.Value(string_value=x)
    if isinstance(x, pb.Value):
        return x
    raise TypeError(f"no Value for {x!r}")


def unvalue(v):
    k = v.WhichOneof("kind")
    if k is None or k == "null_value":
        return None
    return getattr(v, k)


def change(op, **objs):
    """change("upsert", row={...}) -> pb.Change (values through value())."""
    c = pb.Change(op=op)
    for name, obj in objs.items():
        m = getattr(c, name)
        for k, x in obj.items():
            m[k].CopyFrom(value(x))
    return c


class Client:
    def __init__(self, port, options=(), ready_timeout=30):
        opts = [("grpc.max_receive_message_length", 256 << 20),
                ("grpc.max_send_message_length", 256 << 20)] + list(options)
        self.channel = grpc.insecure_channel(f"127.0.0.1:{port}", options=opts)
        # striked answers /healthz (what the harness waits for) just before gRPC listens.
        grpc.channel_ready_future(self.channel).result(timeout=ready_timeout)
        self._unary = {}
        for name, (req, resp) in UNARY.items():
            self._unary[name] = self.channel.unary_unary(
                SERVICE + name, request_serializer=req.SerializeToString,
                response_deserializer=resp.FromString)
        self._scan = self.channel.unary_stream(
            SERVICE + "Scan", request_serializer=pb.ScanRequest.SerializeToString,
            response_deserializer=pb.ScanBatch.FromString)

    def close(self):
        self.channel.close()

    def call(self, method, req=None, /, timeout=60, metadata=None, with_call=False, **fields):
        """Call a unary method with `req` or a request built from fields."""
        if req is None:
            req = UNARY[method][0](**fields)
        f = self._unary[method]
        if with_call:
            return f.with_call(req, timeout=timeout, metadata=metadata)
        return f(req, timeout=timeout, metadata=metadata)

    def raw(self, path, data, timeout=30, metadata=None):
        """Send raw bytes to any method path; return the raw reply bytes."""
        f = self.channel.unary_unary(path, request_serializer=lambda b: b,
                                     response_deserializer=lambda b: b)
        return f(data, timeout=timeout, metadata=metadata)

    def scan_stream(self, timeout=120, metadata=None, **fields):
        """The raw response iterator of Scan (a grpc.Call as well)."""
        return self._scan(pb.ScanRequest(**fields), timeout=timeout, metadata=metadata)

    def scan(self, table, timeout=120, **fields):
        """(snapshot, columns, rows as tuples, number of messages)."""
        it = self.scan_stream(timeout=timeout, table=table, **fields)
        snapshot, columns, rows, n = None, None, [], 0
        for b in it:
            n += 1
            snapshot = b.snapshot
            columns = list(b.columns)
            rows.extend(tuple(unvalue(v) for v in r.values) for r in b.rows)
        return snapshot, columns, rows, n

    def create(self, name, columns, primary_key=(), version_column="", metadata=None):
        cols = [pb.Column(name=c[0], type=c[1], required=bool(c[2]) if len(c) > 2 else False)
                for c in columns]
        return self.call("CreateTable", name=name, columns=cols, primary_key=list(primary_key),
                         version_column=version_column, metadata=metadata)

    def apply(self, table, changes, metadata=None, **fields):
        return self.call("ApplyChanges", table=table, changes=changes, metadata=metadata, **fields)


def status_of(e):
    """(code, details) of a grpc.RpcError."""
    return e.code(), e.details()
