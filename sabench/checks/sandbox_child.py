
# The check's child: the submission's own interpreter (after sandbox_wire.py and sandbox_serve.py).
# It imports what the check asks for and serves the check's calls on its pipes; its results go
# back as data (or handles), its exceptions as descriptions.
REQ, REP, SUBMISSION = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ADDRESS = sys.argv[5]  # the runner's socket: callers other than this main thread call back there
sys.argv = json.loads(sys.argv[4]) or sys.argv  # the run's own command line, as its code saw it
sys.path.insert(0, SUBMISSION)
PIPE_CALLER = (os.getpid(), threading.get_ident())
sys.meta_path.insert(0, PatchFinder)
os.register_at_fork(after_in_child=after_fork)

while True:
    serve(REQ, REP)
