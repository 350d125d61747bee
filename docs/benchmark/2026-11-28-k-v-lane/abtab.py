import re,sys,collections,statistics as st
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    v=l.split()[0]
    kv=dict(re.findall(r'(\w+)=([\d.a-z_]+)',l))
    for pl in ('near','far'):
        if int(kv.get(pl+'_iters','0'))>=200 and pl+'_us' in kv:
            d[(kv['op'],int(kv['bytes']),pl,v)].append(float(kv[pl+'_us']))
vs=sys.argv[2].split(',')
keys=sorted({(o,b,p) for (o,b,p,v) in d})
print("op bytes placement "+" ".join(f"{v}(n)" for v in vs)+"  new/old new/tuned new/best-peer")
for o,b,p in keys:
    m={v:(st.median(d[(o,b,p,v)]),len(d[(o,b,p,v)])) for v in vs if d.get((o,b,p,v))}
    if not all(v in m for v in vs): 
        print(o,b,p,"incomplete",{v:m[v][1] for v in m}); continue
    peers=[m[v][0] for v in vs if v not in('old','new')]
    print(o,b,p," ".join(f"{m[v][0]:.3f}({m[v][1]})" for v in vs),f" {m['new'][0]/m['old'][0]:.2f} {m['new'][0]/m['tuned'][0]:.2f} {m['new'][0]/min(peers):.2f}")
