# Stops at the three copies perf found in Intel MPI 2021.18's libmpi (offsets of that build) and
# prints their arguments: TRACE_AT (MPI_Allgather by default, or MPI_Bcast) marks each call.
import os
import gdb
gdb.execute("set pagination off")
gdb.execute("break " + os.environ.get("TRACE_AT", "MPI_Allgather"))
gdb.execute("run")
base = int(gdb.parse_and_eval("(long)&I_MPI_memcpy_xeon_sse")) - 0x5edc40
gdb.execute("break *%d" % (base + 0xa0d428))
gdb.execute("break *%d" % (base + 0x5edc63))
gdb.execute("break *%d" % (base + 0x5edc50))
gdb.execute("break *%d" % (base + 0x54ffc0))
n = 0
while n < 80:
    try:
        gdb.execute("continue", to_string=True)
    except gdb.error:
        break
    pc = int(gdb.parse_and_eval("$pc")) - base
    if pc == 0x54ffc0:
        print("READ avx2 dst=%x src=%x n=%d" % (int(gdb.parse_and_eval("$rdi")), int(gdb.parse_and_eval("$rsi")), int(gdb.parse_and_eval("$rdx"))))
    elif pc in (0xa0d428, 0x5edc63, 0x5edc50):
        print("REP@%x dst=%x src=%x n=%d" % (pc, int(gdb.parse_and_eval("$rdi")), int(gdb.parse_and_eval("$rsi")), int(gdb.parse_and_eval("$rcx"))))
    else:
        print("---- call")
    n += 1
