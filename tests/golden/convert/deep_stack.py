# Shared by the convert and export golden cases about output size (issue 33): 40 trace entries
# that share one stack of 1,000 frames, written as a protocol-4 pickle to {tmp}/in.pickle. The
# pickle holds the stack once (34 KB in all); JSON repeats it in every entry (1.9 MB).
import os
import pickle


def write_deep_stack(tmp, entries=40, depth=1000):
    stack = [{"name": "f%d" % i, "filename": "model.py", "line": i} for i in range(depth)]
    trace = [{"action": "alloc" if i % 2 == 0 else "free_completed", "addr": 2**30 + 512 * (i // 2),
              "size": 512, "stream": 0, "time_us": 1000 + i, "frames": stack}
             for i in range(entries)]
    with open(os.path.join(tmp, "in.pickle"), "wb") as f:
        pickle.dump({"segments": [], "device_traces": [trace]}, f, protocol=4)
