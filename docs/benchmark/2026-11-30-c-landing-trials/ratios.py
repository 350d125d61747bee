# Ratios of alternated.txt files (bench/alternate.py output, the "near" section):
#   python3 ratios.py set1/alternated.txt set2/alternated.txt
# columns: old, new, old2, tuned, impi
import sys, math
def load(p):
    rows={}
    sec=None
    for l in open(p):
        if l.startswith("== "):
            sec=l.split(":")[0][3:]; continue
        f=l.split()
        if sec=="near" and len(f)==7:
            rows[(f[0],int(f[1]))]=[float(x) for x in f[2:]]
    return rows
rows={}
for p in sys.argv[1:]:
    for k,v in load(p).items(): rows.setdefault(k,[]).append(v)
print("| op | size | new / mean(old, old2) | control old2 / old | new / best of tuned, Intel MPI | old / best of tuned, Intel MPI |")
print("|---|---|---:|---:|---:|---:|")
g=[];gc=[]
for (op,b),vs in sorted(rows.items()):
    # combine sets by geometric mean of the per-set ratios
    r=[v[1]/((v[0]+v[2])/2) for v in vs]; c=[v[2]/v[0] for v in vs]
    p=[v[1]/min(v[3],v[4]) for v in vs]; po=[((v[0]+v[2])/2)/min(v[3],v[4]) for v in vs]
    gm=lambda x: math.exp(sum(map(math.log,x))/len(x))
    g.append(gm(r)); gc.append(gm(c))
    print(f"| {op} | {b>>20} MiB | {' / '.join(f'{x:.2f}' for x in r)} | {' / '.join(f'{x:.2f}' for x in c)} | {' / '.join(f'{x:.2f}' for x in p)} | {' / '.join(f'{x:.2f}' for x in po)} |")
gm=lambda x: math.exp(sum(map(math.log,x))/len(x))
print(f"\nGeometric mean over {len(g)} cells: new / mean(old, old2) {gm(g):.3f}; control old2 / old {gm(gc):.3f}")
