
# A worker of the code under test under a check (after sandbox_wire.py and sandbox_serve.py): a
# Python process the child started that imports anew (spawn, forkserver, a subprocess). The trace
# site ran this with the connection it opened to the runner's socket (CONNECTION) and the runner's
# answer (JOINED): the check's patches, installed here as this process imports the modules they
# patch; its calls back into the check go over connections of its own, opened as they are needed.
REQ = REP = PIPE_CALLER = None
ADDRESS, SUBMISSION = JOINED["address"], JOINED["submission"]
sys.meta_path.insert(0, PatchFinder)
apply_patches(JOINED.get("patches") or [])
CONNECTION.close()  # a caller connects again when it first calls back (serve.channel)
os.register_at_fork(after_in_child=after_fork)
