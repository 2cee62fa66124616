"""The GEMM figures of cudars-blas's benches/gemm.rs through CuPy's matmul (4096^3,
float32, float16, bfloat16 where CuPy has it): 5 warm-up calls, then the median of
7 timings of 20 calls between two events. JSON lines (peer "cupy"), TFLOP/s."""
import json
import statistics

import cupy as cp

N = 4096


def tflops(dtype):
    a = cp.zeros((N, N), dtype=dtype)
    b = cp.zeros((N, N), dtype=dtype)
    c = cp.empty((N, N), dtype=dtype)
    for _ in range(5):
        cp.matmul(a, b, out=c)
    cp.cuda.Device().synchronize()
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    times = []
    for _ in range(7):
        e0.record()
        for _ in range(20):
            cp.matmul(a, b, out=c)
        e1.record()
        e1.synchronize()
        times.append(cp.cuda.get_elapsed_time(e0, e1) / 20)
    return 2.0 * N**3 / (statistics.median(times) * 1e-3) / 1e12


for metric, dtype in (("sgemm_4096_tflops", cp.float32), ("hgemm_4096_tflops", cp.float16)):
    print(json.dumps({"peer": "cupy", "metric": metric, "value": round(tflops(dtype), 4)}))
try:
    import ml_dtypes  # CuPy's bfloat16 comes through ml_dtypes where installed.

    print(json.dumps({"peer": "cupy", "metric": "bf16gemm_4096_tflops", "value": round(tflops(ml_dtypes.bfloat16), 4)}))
except Exception as e:  # noqa: BLE001 - a CuPy without bfloat16 matmul
    import sys

    print(f"gemm_cupy: no bfloat16 figure: {e}", file=sys.stderr)
