"""The thread-scaling figures of cudars-core's benches/threads.rs with NVIDIA's
Python cuda.core: 1, 2, 4, 8 and 16 threads, each with its own stream, launch an
empty kernel (one block of 32, a buffer and an int) 10000 times, then wait for
their stream; the time runs from releasing the threads together to the last one
done. Median of 5 rounds. JSON lines (peer py-cuda.core):
launch_mt_<n>_mlaunch_per_s, millions of launches per second."""
import json
import threading
import time

import numpy as np
from cuda.core import Device, LaunchConfig, Program, ProgramOptions, launch

PER_THREAD = 10000
dev = Device(0)
dev.set_current()
prog = Program('extern "C" __global__ void empty(float* p, int n) {}\n', code_type="c++",
               options=ProgramOptions(arch=f"sm_{dev.arch}"))
empty = prog.compile("cubin").get_kernel("empty")
cfg = LaunchConfig(grid=1, block=32)


def worker(start):
    dev.set_current()
    s = dev.create_stream()
    buf = dev.allocate(1024, stream=s)
    zero = np.int32(0)
    s.sync()
    start.wait()
    for _ in range(PER_THREAD):
        launch(s, cfg, empty, buf, zero)
    s.sync()


for t in (1, 2, 4, 8, 16):
    rounds = []
    for _ in range(5):
        start = threading.Barrier(t + 1)
        ths = [threading.Thread(target=worker, args=(start,)) for _ in range(t)]
        for th in ths:
            th.start()
        start.wait()
        t0 = time.perf_counter()
        for th in ths:
            th.join()
        rounds.append(t * PER_THREAD / (time.perf_counter() - t0) / 1e6)
    rounds.sort()
    print(json.dumps({"peer": "py-cuda.core", "metric": f"launch_mt_{t}_mlaunch_per_s",
                      "value": round(rounds[2], 4)}), flush=True)
