# tab.py FILE [BASE]: per (op, np, bytes) the median over rounds of each
# configuration's median_us, and its ratio to BASE's (default tuned).
import re,sys,collections,statistics as st
d=collections.defaultdict(list); vs=[]
for l in open(sys.argv[1]):
    v=l.split()[0]; kv=dict(re.findall(r'(\w+)=([\w.]+)',l))
    if 'median_us' not in kv: continue
    if v not in vs: vs.append(v)
    d[(kv['op'],int(kv['np']),int(kv['bytes']),v)].append(float(kv['median_us']))
keys=sorted({k[:3] for k in d})
print("op np bytes "+" ".join(vs))
for k in keys:
    m={v:st.median(d[k+(v,)]) for v in vs if d.get(k+(v,))}
    base=m.get(sys.argv[2] if len(sys.argv)>2 else 'tuned')
    print(*k, " ".join(f"{v}={m[v]:.4g}" + (f"({m[v]/base:.2f})" if base else "") for v in m))
