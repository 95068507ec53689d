# Shared by the convert golden cases' setup files: a small 2.1+ snapshot with two devices, shared
# frames, allocator settings and annotations, written as a protocol-5 pickle to {tmp}/in.pickle.
import os
import pickle


def write_fixture(tmp, with_time=True):
    f1 = {"name": "forward", "filename": "model.py", "line": 12}
    f2 = {"name": "<module>", "filename": "train.py", "line": 3}
    tb = [f1, f2]

    def ev(action, addr, size, t):
        e = {"action": action, "addr": addr, "size": size, "stream": 0}
        if with_time:
            e["time_us"] = 1700000000000000 + t
        e["frames"] = tb
        return e
    snap = {
        "segments": [{
            "device": 0, "address": 139637976727552, "total_size": 2097152,
            "allocated_size": 1024, "active_size": 1024, "requested_size": 1000, "stream": 0,
            "segment_type": "small", "segment_pool_id": (0, 0), "is_expandable": False,
            "blocks": [
                {"address": 139637976727552, "size": 1024, "requested_size": 1000,
                 "state": "active_allocated", "frames": tb},
                {"address": 139637976728576, "size": 2096128, "requested_size": 0,
                 "state": "inactive", "frames": []}],
            "frames": tb}],
        "device_traces": [
            [ev("segment_alloc", 139637976727552, 2097152, 0),
             ev("alloc", 139637976727552, 1000, 10),
             ev("alloc", 139637976728576, 512, 20),
             ev("free_requested", 139637976728576, 512, 30),
             ev("free_completed", 139637976728576, 512, 31)],
            [ev("alloc", 139637976727552 + (1 << 40), 4096, 25)]],
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
            "garbage_collection_threshold": 0.0, "expandable_segments": False,
            "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {str(1 << i): 0 for i in range(16)}},
    }
    if with_time:
        snap["external_annotations"] = [
            {"stage": "START", "name": "step", "device": 0, "time_us": 1700000000000005},
            {"stage": "END", "name": "step", "device": 0, "time_us": 1700000000000029}]
    with open(os.path.join(tmp, "in.pickle"), "wb") as f:
        pickle.dump(snap, f, protocol=5)
