# Reads the lines ci/sharm-pvars.c prints (one per process at MPI_Finalize)
# from a job's output and sums one group of counters over the processes:
#
#   awk -v want=served|fallbacks|hierarchical|pair_buffer -f ci/sharm-pvars.awk LOG
#
# prints "op=N", one operation a line (none when nothing was counted).
# A line may come after another process's output with no newline between
# them (a unittest progress dot, ".sharm-pvars: rank 2 served ..."), so it
# is looked for anywhere in a line, and read from where it starts.
{
    at = index($0, "sharm-pvars: rank ")
    if (at == 0) next
    $0 = substr($0, at)
    if ($4 != "served") next
    mode = ""
    for (i = 4; i <= NF; i++) {
        if ($i == "served" || $i == "fallbacks" || $i == "hierarchical" || $i == "pair_buffer") {
            mode = $i
            continue
        }
        if (mode == want && split($i, kv, "=") == 2) n[kv[1]] += kv[2]
    }
}
END { for (k in n) printf "%s=%d\n", k, n[k] }
