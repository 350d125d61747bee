import re,statistics as st,collections,sys
d=collections.defaultdict(list)
for l in open(sys.argv[1]):
    m=re.match(r'(\S+) round=\d+ RESULT op=(\S+) bytes=(\d+) .*median_us=([\d.]+)',l)
    if m: d[(m[2],int(m[3]),m[1])].append(float(m[4]))
labels=sys.argv[2:]
for op,b in sorted({(k[0],k[1]) for k in d}):
    meds=[st.median(d[(op,b,x)]) for x in labels]
    print(op,b,' '.join(f'{x}={m:.1f}' for x,m in zip(labels,meds)),'ratio',round(meds[1]/meds[0],3),'n',[len(d[(op,b,x)]) for x in labels])
