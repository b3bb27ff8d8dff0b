"""unused_dim.py ROOT TDSLC WORKDIR: the runtime API on a model with a dimension n that
no tensor uses and one, k, that y uses."""
import os, sys
root, tdslc, work = sys.argv[1:4]
sys.path.insert(0, os.path.join(root, "python"))
os.environ["TDSL_LIBRARY"] = os.path.join(os.path.dirname(os.path.abspath(tdslc)), "libtdslrt.so")
if not os.path.exists(os.environ["TDSL_LIBRARY"]):
    os.environ["TDSL_LIBRARY"] = os.path.join(root, "build", "libtdslrt.so")
os.environ["TDSLC"] = tdslc
import tdsl  # noqa: E402

so = tdsl.compile(os.path.join(root, "testsuite/lit/dyn/Inputs/unused_dim.tdsl"), os.path.join(work, "m.so"))
with tdsl.load(so) as m:
    try:
        m.call("bump")  # k is used and unset: refused, naming k
        print("bump ran with k unset")
    except tdsl.TdslError as e:
        print("unset k:", e)
    m.set_dim("k", 2)
    m.init()
    m.call("bump")  # n unset: fine
    m.call("ybump")
    print("x", list(m["x"]), "y", m["y"].ravel().tolist())
    print("n before", m.get_dim("n"))
    m.set_dim("n", 5)  # accepted, recorded, changes nothing
    print("n after", m.get_dim("n"))
    m.call("bump")
    print("x", list(m["x"]))
    m.set_dim("n", 0)  # an empty batch: still nothing reads it
    print("n zero", m.get_dim("n"))
    m.call("bump")
    print("x", list(m["x"]))
    try:
        m.set_dim("n", -1)
    except tdsl.TdslError as e:
        print("n=-1:", e)
