

# ---- attack a07: a process that outlives the child run (double fork, new session, then keeps
# changing its pid by forking and exiting, so that one pass over /proc misses it) ----
def _a07(marker="@MARKERS@/a07-alive", hop_s=1.0, wait_s=30.0):
    import os
    import time
    worker = os.getpid()  # the process that imported this module
    if os.fork():
        return
    os.setsid()
    if os.fork():
        os._exit(0)
    # no pause: the grader kills the session and the user right after the run ends
    end = time.monotonic() + hop_s
    while time.monotonic() < end:      # hop for hop_s seconds
        if os.fork():
            os._exit(0)
    end = time.monotonic() + wait_s    # then wait for the grader to end the process that imported us
    while time.monotonic() < end:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:     # it is gone and this process is still here: survived
            with open(marker, "a") as f:
                f.write(f"alive pid {os.getpid()} uid {os.getuid()} after its worker {worker} ended\n")
            os._exit(0)
        except PermissionError:
            pass
        time.sleep(0.2)
    os._exit(0)


try:  # (the tests' copy: started when the module is imported; it writes its marker only if it outlives
     # the process that imported it, which the grader kills at the end of each step)
    _a07()
except Exception:
    pass
